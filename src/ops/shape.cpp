// View ops (reshape, permute, slice, expand, ...) and copies (contiguous, clone, to), each with its backward.
#include <numeric>

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "kernels/cuda/copy.h"

namespace vt {

namespace {

Tensor attach_unary(Tensor out, const Tensor& in, std::shared_ptr<Node> node) {
  if (any_requires_grad({&in})) attach_node(out, node, {&in});
  return out;
}

struct ReshapeBackward : Node {
  Shape input_shape;
  const char* name() const override { return "ReshapeBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g.reshape(input_shape)}; }
};

struct PermuteBackward : Node {
  std::vector<int64_t> inverse;
  const char* name() const override { return "PermuteBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g.permute(inverse)}; }
};

struct SliceBackward : Node {
  Shape input_shape;
  DType dtype;
  int64_t dim, start, end, step;
  const char* name() const override { return "SliceBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor full = Tensor::zeros(input_shape, dtype, g.device());
    full.slice(dim, start, end, step).copy_(g);
    return {full};
  }
};

struct ExpandBackward : Node {
  Shape input_shape;
  const char* name() const override { return "ExpandBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {ops::sum_to(g, input_shape)}; }
};

struct IdentityBackward : Node {
  const char* name() const override { return "CopyBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g}; }
};

struct ToBackward : Node {
  DType input_dtype;
  const char* name() const override { return "ToBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    // Into a leaf's existing gradient (an autocast weight cast meeting its f32 .grad) the accumulation itself
    // converts, in one kernel instead of a cast and an add.
    if (const auto* acc = dynamic_cast<const AccumulateGrad*>(next.empty() ? nullptr : next[0].get());
        acc && acc->leaf()->grad && acc->leaf()->dtype == input_dtype)
      return {g};
    return {g.to(input_dtype)};
  }
};

struct ToDeviceBackward : Node {
  Device input_device;
  const char* name() const override { return "ToDeviceBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g.to(input_device)}; }
};

// Copies the bytes of contiguous `src` into contiguous `dst` (same dtype and size) across devices.
void transfer(const Tensor& dst, const Tensor& src) {
  const size_t nbytes = static_cast<size_t>(src.numel()) * dtype_size(src.dtype());
  const Device from = src.device(), to = dst.device();
  namespace kc = kernels::cuda;
  if (from.is_cpu() && to.is_cuda()) return kc::copy_host_to_device(to.index, dst.raw_data(), src.raw_data(), nbytes);
  if (from.is_cuda() && to.is_cpu()) return kc::copy_device_to_host(from.index, dst.raw_data(), src.raw_data(), nbytes);
  if (from.is_cuda() && to.is_cuda())
    return kc::copy_device_to_device(to.index, dst.raw_data(), from.index, src.raw_data(), nbytes);
  VT_FAIL("[to] cannot copy ", src.describe(), " from ", from.str(), " to ", to.str(), " in this build");
}

// Strides for viewing a contiguous-compatible tensor with a new shape, or empty when a copy is needed.
/// Strides that present t's memory as `shape` without a copy, when there are any (PyTorch's rule: the new dims
/// must split or merge runs of old dims that are laid out contiguously with respect to each other).
bool view_strides(const Tensor& t, const Shape& shape, Shape& strides) {
  if (t.is_contiguous() || t.numel() == 0) {
    strides = contiguous_strides(shape);
    return true;
  }
  const Shape& old_shape = t.shape();
  const Shape& old_strides = t.strides();
  strides.assign(shape.size(), 0);
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    // A chunk ends where the next-outer dim is not laid out right after this run.
    if (d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::reshape(const Shape& requested) const {
  Shape shape = requested;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      VT_CHECK(infer < 0, "[reshape] more than one -1 in ", to_string(requested));
      infer = static_cast<int64_t>(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    VT_CHECK(known > 0 && numel() % known == 0, "[reshape] cannot reshape ", describe(), " to ", to_string(requested));
    shape[infer] = numel() / known;
  }
  VT_CHECK(vt::numel(shape) == numel(), "[reshape] cannot reshape ", describe(), " to ", to_string(requested));
  Shape strides;
  Tensor out;
  if (view_strides(*this, shape, strides)) {
    out = make_view(*this, shape, strides, offset());
  } else {
    Tensor c = contiguous();
    out = make_view(c, shape, contiguous_strides(shape), c.offset());
  }
  auto node = std::make_shared<ReshapeBackward>();
  node->input_shape = this->shape();
  return attach_unary(out, *this, node);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  VT_CHECK(static_cast<int64_t>(dims.size()) == dim(), "[permute] ", dims.size(), " dims for ", describe());
  Shape shape(dims.size()), strides(dims.size());
  std::vector<int64_t> inverse(dims.size(), -1);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    VT_CHECK(inverse[d] < 0, "[permute] dim ", d, " repeated");
    inverse[d] = static_cast<int64_t>(i);
    shape[i] = this->shape()[d];
    strides[i] = this->strides()[d];
  }
  auto node = std::make_shared<PermuteBackward>();
  node->inverse = inverse;
  return attach_unary(make_view(*this, shape, strides, offset()), *this, node);
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  a = wrap_dim(a, dim(), "transpose");
  b = wrap_dim(b, dim(), "transpose");
  std::vector<int64_t> dims(dim());
  std::iota(dims.begin(), dims.end(), 0);
  if (dim() > 0) std::swap(dims[a], dims[b]);  // a 0-d tensor accepts dim 0 and stays as it is
  return permute(dims);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  VT_CHECK(dim() > 0, "[slice] cannot slice the 0-d tensor ", describe());
  d = wrap_dim(d, dim(), "slice");
  int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  VT_CHECK(step >= 1, "[slice] step must be positive, got ", step);
  Shape shape = this->shape(), strides = this->strides();
  shape[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  auto node = std::make_shared<SliceBackward>();
  node->input_shape = this->shape();
  node->dtype = dtype();
  node->dim = d;
  node->start = start;
  node->end = end;
  node->step = step;
  return attach_unary(make_view(*this, shape, strides, offset() + start * this->strides()[d]), *this, node);
}

Tensor Tensor::expand(const Shape& target) const {
  VT_CHECK(static_cast<int64_t>(target.size()) >= dim(), "[expand] cannot expand ", describe(), " to ",
           to_string(target));
  size_t lead = target.size() - dim();
  Shape shape = target, strides(target.size(), 0);
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < lead) {
      VT_CHECK(target[i] >= 0, "[expand] cannot expand ", describe(), " to ", to_string(target),
               ": new leading dims need a size");
      continue;
    }
    int64_t src = this->shape()[i - lead];
    if (target[i] == -1) shape[i] = src;
    VT_CHECK(src == shape[i] || src == 1, "[expand] cannot expand ", describe(), " to ", to_string(target));
    strides[i] = src == 1 && shape[i] != 1 ? 0 : this->strides()[i - lead];
  }
  auto node = std::make_shared<ExpandBackward>();
  node->input_shape = this->shape();
  return attach_unary(make_view(*this, shape, strides, offset()), *this, node);
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  Shape shape(this->shape().begin(), this->shape().begin() + start);
  int64_t merged = 1;
  for (int64_t i = start; i <= end; ++i) merged *= this->shape()[i];
  shape.push_back(merged);
  shape.insert(shape.end(), this->shape().begin() + end + 1, this->shape().end());
  return reshape(shape);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape shape = this->shape();
  shape.insert(shape.begin() + d, 1);
  return reshape(shape);
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  if (dim() == 0) return reshape({});
  VT_CHECK(shape()[d] == 1, "[squeeze] dim ", d, " of ", describe(), " is not 1");
  Shape shape = this->shape();
  shape.erase(shape.begin() + d);
  return reshape(shape);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = Tensor::empty(shape(), dtype(), device());
  out.copy_(*this);
  return attach_unary(out, *this, std::make_shared<IdentityBackward>());
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  Tensor out = Tensor::empty(shape(), target, device());
  out.copy_(*this);
  if (!is_floating(target)) return out;
  auto node = std::make_shared<ToBackward>();
  node->input_dtype = dtype();
  return attach_unary(out, *this, node);
}

Tensor as_cast_of(const Tensor& t, const Tensor& cast) {
  VT_CHECK(cast.shape() == t.shape() && cast.device() == t.device() && is_floating(cast.dtype()), "[as_cast_of] ",
           cast.describe(), " is not a floating cast of ", t.describe());
  auto node = std::make_shared<ToBackward>();
  node->input_dtype = t.dtype();
  return attach_unary(make_view(cast, cast.shape(), cast.strides(), cast.offset()), t, node);
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  Tensor src = detach().contiguous();  // packed on its own device first, then one flat transfer
  Tensor out = Tensor::empty(shape(), dtype(), target);
  transfer(out, src);
  auto node = std::make_shared<ToDeviceBackward>();
  node->input_device = device();
  return attach_unary(out, *this, node);
}

}  // namespace vt
