#include "tensor/tensor.h"

#include "autograd/node.h"
#include "kernels/cpu/copy.h"
#ifdef VT_WITH_CUDA
#include "kernels/cuda/copy.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/stream.h"
#endif

namespace vt {

namespace {
// Device memory comes from the device's caching allocator on the default stream (stream 0), the stream all CUDA
// work runs on for now, so a freed block can be reused at once; during a CUDA graph capture, on the capturing stream
// (kernels/cuda/stream.h: allocation_stream), whose blocks only the graph uses.
std::shared_ptr<Storage> allocate(size_t nbytes, Device device, bool zero) {
  if (device.is_cpu()) return Storage::allocate_cpu(nbytes, zero);
#ifdef VT_WITH_CUDA
  const int index = device.index;
  kernels::cuda::check_device(index, "empty");
  void* p = kernels::cuda::cuda_allocator(index).allocate(nbytes,
                                                          kernels::cuda::to_stream(kernels::cuda::allocation_stream()));
  auto storage =
      std::make_shared<Storage>(p, nbytes, device, [index](void* q) { kernels::cuda::cuda_allocator(index).free(q); });
  if (zero) kernels::cuda::memset_zero(index, p, nbytes);
  return storage;
#else
  VT_FAIL("[empty] device ", device.str(), " requested, but this build has no CUDA backend (configured with ",
          "VT_CUDA=OFF or without nvcc)");
#endif
}

Tensor make(const Shape& shape, DType dtype, Device device, bool zero) {
  for (int64_t d : shape) VT_CHECK(d >= 0, "[empty] negative size in shape ", to_string(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = allocate(static_cast<size_t>(numel(shape)) * dtype_size(dtype), device, zero);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}
}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) { return make(shape, dtype, device, false); }
Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return make(shape, dtype, device, true); }
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = make(shape, dtype, device, false);
  t.fill_(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<double>& values, const Shape& shape, DType dtype) {
  VT_CHECK(static_cast<int64_t>(values.size()) == vt::numel(shape), "[from_vector] ", values.size(),
           " values for shape ", to_string(shape));
  Tensor t = make(shape, dtype, cpu(), false);
  kernels::cpu::copy_strided(t.raw_data(), dtype, t.strides(), values.data(), DType::f64, contiguous_strides(shape),
                             shape);
  return t;
}

Tensor Tensor::arange(int64_t n, DType dtype, Device device) {
  VT_CHECK(n >= 0, "[arange] n = ", n, " is negative");
  if (device.is_cuda()) {
#ifdef VT_WITH_CUDA
    Tensor t = make({n}, dtype, device, false);
    kernels::cuda::iota(device.index, t.raw_data(), dtype, n);
    return t;
#else
    VT_FAIL("[arange] ", device.str(), " tensor in a build without CUDA");
#endif
  }
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return from_vector(v, {n}, dtype);
}

int64_t Tensor::size(int64_t d) const {
  VT_CHECK(dim() > 0, "[size] tensor ", describe(), " has no dims");
  return shape()[wrap_dim(d, dim(), "size")];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (shape()[i] == 1) continue;
    if (strides()[i] != expected) return false;
    expected *= shape()[i];
  }
  return true;
}

std::string Tensor::describe() const {
  return defined() ? std::string(dtype_name(dtype())) + to_string(shape()) : "undefined";
}

void* Tensor::raw_data() const {
  return static_cast<char*>(impl().storage->data()) + offset() * static_cast<int64_t>(dtype_size(dtype()));
}

std::vector<double> Tensor::to_vector() const {
  if (!device().is_cpu()) return detach().to(cpu()).to_vector();
  std::vector<double> out(static_cast<size_t>(numel()));
  kernels::cpu::copy_strided(out.data(), DType::f64, contiguous_strides(shape()), raw_data(), dtype(), strides(),
                             shape());
  return out;
}

double Tensor::item() const {
  VT_CHECK(numel() == 1, "[item] tensor ", describe(), " has more than one element");
  return to_vector()[0];
}

Tensor& Tensor::set_requires_grad(bool r) {
  VT_CHECK(!r || is_floating(dtype()), "[requires_grad] ", describe(), " is not floating point");
  VT_CHECK(is_leaf(), "[requires_grad] can only be set on a leaf tensor");
  impl().requires_grad = r;
  return *this;
}

void Tensor::backward(const Tensor& grad) const {
  VT_CHECK(requires_grad(), "[backward] tensor ", describe(), " does not require grad");
  Tensor seed = grad;
  if (!seed.defined()) {
    VT_CHECK(numel() == 1, "[backward] implicit gradient needs a one-element tensor, got ", describe());
    seed = Tensor::ones(shape(), dtype(), device());
  }
  VT_CHECK(seed.shape() == shape(), "[backward] gradient ", seed.describe(), " for tensor ", describe());
  run_backward(*this, seed);
}

Tensor Tensor::detach() const {
  auto impl2 = std::make_shared<TensorImpl>();
  impl2->storage = impl().storage;
  impl2->shape = shape();
  impl2->strides = strides();
  impl2->offset = offset();
  impl2->dtype = dtype();
  return Tensor(impl2);
}

void Tensor::copy_(const Tensor& src) const {
  VT_CHECK(src.shape() == shape(), "[copy_] source ", src.describe(), " into ", describe());
  if (!(src.device() == device())) {
    copy_(src.detach().to(device()));  // transfer first, then convert/scatter on this device
    return;
  }
  if (device().is_cpu()) {
    kernels::cpu::copy_strided(raw_data(), dtype(), strides(), src.raw_data(), src.dtype(), src.strides(), shape());
    return;
  }
#ifdef VT_WITH_CUDA
  kernels::cuda::copy_strided(device().index, raw_data(), dtype(), strides(), src.raw_data(), src.dtype(),
                              src.strides(), shape());
#else
  VT_FAIL("[copy_] ", device().str(), " tensor in a build without CUDA");
#endif
}

void Tensor::fill_(double value) const {
  if (!is_contiguous()) {
    copy_(Tensor::full(shape(), value, dtype(), device()));
  } else if (device().is_cpu()) {
    kernels::cpu::fill(raw_data(), dtype(), numel(), value);
  } else {
#ifdef VT_WITH_CUDA
    kernels::cuda::fill(device().index, raw_data(), dtype(), numel(), value);
#else
    VT_FAIL("[fill_] ", device().str(), " tensor in a build without CUDA");
#endif
  }
}

void require_cpu(const char* op, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (t && t->defined() && !t->device().is_cpu())
      VT_FAIL("[", op, "] no CUDA kernel yet (input ", t->describe(), " is on ", t->device().str(), ")");
  }
}

Device common_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t || !t->defined()) continue;
    if (!first) {
      first = t;
    } else if (!(t->device() == first->device())) {
      VT_FAIL("[", op, "] devices differ: ", first->describe(), " on ", first->device().str(), " and ", t->describe(),
              " on ", t->device().str());
    }
  }
  return first ? first->device() : cpu();
}

void fail_without_cuda(const char* op, Device device) {
  VT_FAIL("[", op, "] ", device.str(), " tensor in a build without CUDA");
}

void check_cuda_float(const Tensor& x, const char* op) {
  VT_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::bf16, "[", op, "] CUDA needs f32 or bf16, got ",
           x.describe());
}

void check_device_float(const Tensor& x, const char* op) {
  if (x.device().is_cuda()) return check_cuda_float(x, op);
  VT_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64, "[", op, "] CPU needs f32 or f64, got ", x.describe());
}

Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl().storage;
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(impl);
}

}  // namespace vt
