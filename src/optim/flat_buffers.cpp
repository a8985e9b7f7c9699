// Flat parameter/gradient buffers: layout, re-pointing the parameters, gradient views.
#include "optim/flat_buffers.h"

#include <algorithm>

namespace vt::optim {

namespace {
int64_t round_up(int64_t n, int64_t a) { return (n + a - 1) / a * a; }
}  // namespace

FlatBuffers::FlatBuffers(const std::vector<ParamGroup>& groups) {
  const Tensor* first = nullptr;
  int64_t end = 0;
  for (const auto& g : groups) {
    for (const auto& p : g.params) {
      if (!first) first = &p;
      VT_CHECK(p.device() == first->device() && p.dtype() == first->dtype(), "[flat_buffers] parameter ", p.describe(),
               " on ", p.device().str(), " differs from ", first->describe(), " on ", first->device().str(),
               ": flat buffers need one device and one dtype");
      VT_CHECK(std::find(param_impls_.begin(), param_impls_.end(), p.impl_ptr()) == param_impls_.end(),
               "[flat_buffers] parameter ", p.describe(), " appears twice");
      param_impls_.push_back(p.impl_ptr());
      offsets_.push_back(end);
      end += round_up(p.numel(), kAlign);
    }
    group_ends_.emplace_back(end, g.weight_decay);
  }
  const Device device = first ? first->device() : cpu();
  const DType dtype = first ? first->dtype() : DType::f32;
  params_ = Tensor::zeros({end}, dtype, device);
  grads_ = Tensor::zeros({end}, dtype, device);
  for (size_t k = 0; k < param_impls_.size(); ++k) {
    Tensor p(param_impls_[k]);
    repoint(p, params_, static_cast<int64_t>(k));
    Tensor grad_view = view(grads_, static_cast<int64_t>(k));
    if (Tensor g = p.grad(); g.defined()) grad_view.copy_(g);
    p.impl().grad = grad_view.impl_ptr();
    grad_views_.push_back(grad_view.impl_ptr());
  }
}

Tensor FlatBuffers::new_buffer() const { return Tensor::zeros({size()}, dtype(), device()); }

Tensor FlatBuffers::view(const Tensor& flat, int64_t k) const {
  const Shape& shape = param_impls_[static_cast<size_t>(k)]->shape;
  return make_view(flat, shape, contiguous_strides(shape), offsets_[static_cast<size_t>(k)]);
}

void FlatBuffers::repoint(const Tensor& t, const Tensor& flat, int64_t k) const {
  Tensor slot = view(flat, k);
  VT_CHECK(t.shape() == slot.shape() && t.dtype() == flat.dtype() && t.device() == flat.device(), "[flat_buffers] ",
           t.describe(), " on ", t.device().str(), " cannot move into parameter ", k, "'s slot ", slot.describe(),
           " on ", flat.device().str());
  slot.copy_(t.detach());
  TensorImpl& impl = t.impl();
  impl.storage = flat.impl().storage;
  impl.strides = slot.strides();
  impl.offset = slot.offset();
}

int64_t FlatBuffers::index_of(const TensorImpl* impl) const {
  for (size_t k = 0; k < param_impls_.size(); ++k)
    if (param_impls_[k].get() == impl) return static_cast<int64_t>(k);
  return -1;
}

void FlatBuffers::zero_grads() {
  if (size() > 0) grads_.fill_(0.0);
  for (size_t k = 0; k < param_impls_.size(); ++k) param_impls_[k]->grad = grad_views_[k];
}

void FlatBuffers::reattach_grads() {
  for (size_t k = 0; k < param_impls_.size(); ++k) {
    auto& grad = param_impls_[k]->grad;
    if (grad == grad_views_[k]) continue;
    Tensor view(grad_views_[k]);
    if (grad) view.copy_(Tensor(grad));
    else view.fill_(0.0);
    grad = grad_views_[k];
  }
}

}  // namespace vt::optim
