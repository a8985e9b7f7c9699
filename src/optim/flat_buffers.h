// One flat buffer for all parameters of an optimizer and one for their gradients (llm.c's layout), so an update of
// every parameter is one kernel launch and zeroing every gradient is one fill. Parameter k occupies [offset(k),
// offset(k) + numel) of each buffer; offsets are multiples of kAlign elements (64-byte aligned for f32) and the padding
// between parameters stays zero. Groups are contiguous ranges, in group order.
//
// The parameters are re-pointed in place: their TensorImpl (shared by every Tensor handle of the model) gets the flat
// storage with the parameter's offset, so modules keep using the same tensors. Each gradient becomes a view of the flat
// gradient buffer; the autograd engine accumulates into an existing leaf gradient in place, so backward writes straight
// into the flat buffer.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "optim/optimizer.h"

namespace vt::optim {

class FlatBuffers {
 public:
  static constexpr int64_t kAlign = 16;

  /// Copies every parameter of `groups` (one device, one floating dtype, each tensor at most once) into a new flat
  /// buffer and re-points it there; existing gradient values are copied into the flat gradient buffer.
  explicit FlatBuffers(const std::vector<ParamGroup>& groups);

  /// The flat 1-D buffers of parameter values and gradients.
  const Tensor& params() const { return params_; }
  const Tensor& grads() const { return grads_; }
  int64_t size() const { return params_.numel(); }
  Device device() const { return params_.device(); }
  DType dtype() const { return params_.dtype(); }
  int64_t num_params() const { return static_cast<int64_t>(offsets_.size()); }
  int64_t offset(int64_t k) const { return offsets_[static_cast<size_t>(k)]; }
  /// Per group in order: (end offset in the flat buffers, weight decay); the last end is size().
  const std::vector<std::pair<int64_t, double>>& group_ends() const { return group_ends_; }

  /// A new zero-filled buffer with the flat layout (for optimizer state).
  Tensor new_buffer() const;
  /// Parameter k's slice of a buffer with the flat layout, shaped like the parameter.
  Tensor view(const Tensor& flat, int64_t k) const;
  /// Copies `t` (parameter k's shape, flat's dtype and device) into view(flat, k) and re-points t's TensorImpl there,
  /// so every handle of t (e.g. a module's parameter) uses the flat buffer from now on. Its gradient is untouched.
  void repoint(const Tensor& t, const Tensor& flat, int64_t k) const;
  /// Index of the parameter whose TensorImpl is `impl`, or -1.
  int64_t index_of(const TensorImpl* impl) const;

  /// Zeroes the flat gradient buffer (one fill) and makes every gradient its flat view again.
  void zero_grads();
  /// Makes every gradient its flat view again where something replaced it (its values are copied in) or dropped it (the
  /// view is zeroed). Host-side pointer checks only when nothing was replaced.
  void reattach_grads();

 private:
  Tensor params_, grads_;
  std::vector<int64_t> offsets_;
  std::vector<std::pair<int64_t, double>> group_ends_;
  std::vector<std::shared_ptr<TensorImpl>> param_impls_;  // the parameters, re-pointed
  std::vector<std::shared_ptr<TensorImpl>> grad_views_;   // their gradients as views of grads_
};

}  // namespace vt::optim
