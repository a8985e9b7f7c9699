#include "tensor/tensor.h"

#include "autograd/node.h"
#include "kernels/cpu/copy.h"

namespace vt {

namespace {
Tensor make(const Shape& shape, DType dtype, Device device, bool zero) {
  VT_CHECK(device.is_cpu(), "[empty] device ", device.str(), " has no allocator in this build");
  for (int64_t d : shape) VT_CHECK(d >= 0, "[empty] negative size in shape ", to_string(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate_cpu(static_cast<size_t>(numel(shape)) * dtype_size(dtype), zero);
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
  kernels::cpu::copy_strided(t.raw_data(), dtype, t.strides(), values.data(), DType::f64,
                             contiguous_strides(shape), shape);
  return t;
}

Tensor Tensor::arange(int64_t n, DType dtype) {
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
  VT_CHECK(device().is_cpu(), "[to_vector] tensor is on ", device().str());
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
    seed = Tensor::ones(shape(), dtype());
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
  kernels::cpu::copy_strided(raw_data(), dtype(), strides(), src.raw_data(), src.dtype(), src.strides(), shape());
}

void Tensor::fill_(double value) const {
  if (is_contiguous()) {
    kernels::cpu::fill(raw_data(), dtype(), numel(), value);
  } else {
    copy_(Tensor::full(shape(), value, dtype()));
  }
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
