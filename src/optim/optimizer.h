// Optimizer base: parameter groups, the learning rate, per-parameter state slots, and the flat named-tensor
// form of that state used by checkpoints. Subclasses (AdamW, SGD) only write the update rule.
// Also gradient clipping by global norm (clip_grad.cpp), which every training loop calls before step().
//
// Parameters on a CUDA device always use flat buffers (flat_buffers.h): the constructor re-points them into one
// buffer, gradients are views of one gradient buffer, the state is flat too, and step() is one kernel launch
// with no host synchronization. On the CPU the per-tensor path is the default; use_flat_buffers() opts in.
//
// CUDA graphs: step() = prepare_step() + apply_step(). prepare_step() does the host bookkeeping of one update and
// writes the values that change per step (lr, bias corrections, ...) into a small device buffer with one tiny launch;
// it is never captured. apply_step() (and clip_grad_norm() before it) launch kernels whose arguments are the same at
// every step (buffers, sizes, constant hyper-parameters), so they may be captured once and the graph replayed after
// each prepare_step() on the same stream: clip + update are two launches (clip_grad_norm() launches the partial sums
// of the norm, the update finishes the norm itself). An EMA of the parameters can be fused into the update (set_ema()).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace vt::optim {

/// Parameters that share hyper-parameters (today only the weight decay, as timm's two groups).
struct ParamGroup {
  std::vector<Tensor> params;
  double weight_decay = 0.0;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// As torch.nn.utils.clip_grad_norm_ (L2): scales every gradient by min(1, max_norm / (total_norm + 1e-6)) and
/// returns total_norm, the L2 norm of all gradients together before clipping. Parameters without a gradient are
/// skipped. A non-finite total norm is returned as is, and the gradients are scaled by the resulting 0 or NaN
/// factor as torch does: check the result.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);
double clip_grad_norm(const std::vector<ParamGroup>& groups, double max_norm);
double clip_grad_norm(const NamedTensors& named_params, double max_norm);

class FlatBuffers;

class Optimizer {
 public:
  Optimizer(std::vector<ParamGroup> groups, double lr);
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient (parameters without one are skipped, as in torch):
  /// prepare_step() then apply_step().
  void step();
  /// The host part of the next update: step counts, this step's lr (read now) and derived values, state buffers
  /// created on first use; on CUDA one tiny launch on the current stream writes this step's values into the
  /// optimizer's device buffer. Never capture it in a CUDA graph: call it before every replay of apply_step().
  void prepare_step();
  /// The update prepared by the last prepare_step(): gradients back into the flat buffer, the pending clip consumed,
  /// the update launch (with the fused EMA, if any). On CUDA its launch arguments are the same at every step (per-step
  /// values are read from the device buffer), so it may be captured in a CUDA graph. The per-tensor path (CPU)
  /// advances the step count of each parameter that has a gradient here.
  void apply_step();
  /// Drops the gradients (torch's default set_to_none), or zero-fills them in place to keep views into a
  /// flat gradient buffer valid. With flat buffers both forms zero the flat gradient buffer in one fill.
  void zero_grad(bool set_to_none = true);

  /// Clips the gradients by their global L2 norm as clip_grad_norm() and returns the norm before clipping as a
  /// 0-d tensor on the parameters' device. Call it after backward and before step(); the last call counts. On CUDA
  /// it only launches the norm's partial sums: the next step()/apply_step() finishes the norm, applies the clip
  /// inside the update (the gradient buffer itself is left unscaled) and writes the norm into the returned tensor,
  /// with no host synchronization. So read that tensor after the step (and only when logging, item() waits for the
  /// device); before it, it still holds the previous step's norm (0 before the first). It is the same device tensor
  /// at every call (graph capture), overwritten by the next clipped step: clone() it to keep it longer. A zero_grad()
  /// before the step drops the clip, and the tensor is not written. On the CPU the clip is applied at once.
  Tensor clip_grad_norm(double max_norm);

  /// Moves parameters, gradients and state into flat buffers (see flat_buffers.h); the constructor does it for
  /// parameters on CUDA. Needs one device and dtype, at most 8 groups, and no state yet. Afterwards every
  /// parameter takes part in every step (a missing gradient counts as zero, like torch with set_to_none=False).
  void use_flat_buffers();
  /// The flat buffers, or nullptr on the per-tensor path.
  const FlatBuffers* flat() const { return flat_.get(); }

  /// True when set_ema() may be called: flat buffers over the whole parameter set (AdamW: no set_flat_range).
  virtual bool can_fuse_ema() const { return flat_ != nullptr; }
  /// Fuses timm's EMA into every later update: right after an element of the flat parameter buffer gets its new
  /// value p, the same element of `flat_ema` (1-D, flat layout: size, dtype and device of flat()->params()) becomes
  /// decay·ema + (1 - decay)·p, rounded as ModelEma::update()'s three ops. Needs can_fuse_ema().
  void set_ema(const Tensor& flat_ema, double decay);
  /// The fused EMA buffer of set_ema(), or an undefined tensor.
  const Tensor& fused_ema() const { return ema_.buffer; }

  /// A copy of the state as named tensors: "step" (i64), "lr" (f64), and per parameter k (numbered across
  /// groups in order) "param.k.step" (i64) and "param.k.<slot>" for each of slot_names().
  NamedTensors state() const;
  /// Replaces the state with one made by state() of an optimizer over the same parameters; throws naming the
  /// key on an unknown name, a parameter index out of range, or a shape that does not fit.
  void load_state(const NamedTensors& state);

  int64_t step_count() const { return step_count_; }
  int64_t num_params() const;
  /// Names of the per-parameter state tensors (each has its parameter's shape and dtype).
  virtual std::vector<std::string> slot_names() const = 0;

  double lr;
  std::vector<ParamGroup> groups;

 protected:
  /// The subclass's part of prepare_step(), after the step counts advanced; step_lr_ holds this step's lr.
  virtual void prepare_update() = 0;
  /// The subclass's part of apply_step(), after the gradients were re-attached to the flat buffer.
  virtual void apply_update() = 0;
  /// Flat mode: the step count t shared by every parameter (after prepare_step advanced it).
  int64_t flat_step_count() const { return param_steps_.empty() ? step_count_ : param_steps_.front(); }
  /// The device buffer (at least `bytes`, 16-byte aligned) that prepare_step() writes a step's values into.
  void* device_step_scalars(size_t bytes);

  /// Calls fn(k, group, param) for every parameter, k counting across groups.
  template <typename Fn>
  void for_each_param(Fn&& fn) {
    int64_t k = 0;
    for (auto& g : groups)
      for (auto& p : g.params) fn(k++, g, p);
  }
  /// The state tensor `name` of parameter k, or nullptr before the parameter's first update.
  Tensor* find_slot(int64_t k, const std::string& name);
  /// The state tensor `name` of parameter k, created as zeros shaped like `param` on first use.
  Tensor& slot(int64_t k, const std::string& name, const Tensor& param);
  /// Checks that `param` can be updated in place from its gradient; `op` names the optimizer in errors.
  static void check_param(const char* op, int64_t k, const Tensor& param, const Tensor& grad);

  /// The flat state buffer `name` (zero-filled on first use); parameter k's slot `name` is its view.
  Tensor& flat_slot(const std::string& name);
  /// True once flat_slot(name) exists.
  bool has_flat_slot(const std::string& name) const { return flat_slots_.count(name) > 0; }
  /// The device clip of the last clip_grad_norm() call (partials undefined when none), consumed by a step: the norm's
  /// partial sums, and the 0-d f32 tensor the step writes the norm into.
  struct PendingClip {
    Tensor partials;
    Tensor norm;
    double max_norm = 0.0;
  };
  PendingClip take_pending_clip();

  int64_t step_count_ = 0;
  std::vector<int64_t> param_steps_;                  // updates applied to each parameter
  std::vector<std::map<std::string, Tensor>> slots_;  // per parameter: slot name -> tensor
  std::unique_ptr<FlatBuffers> flat_;
  std::map<std::string, Tensor> flat_slots_;  // slot name -> flat buffer (flat mode)
  PendingClip pending_clip_;
  Tensor norm_workspace_;  // partial sums of the device grad norm
  Tensor clip_norm_;       // the device grad norm, written by the clipped step (same buffer)
  double step_lr_ = 0.0;   // lr read by the last prepare_step()
  bool prepared_ = false;  // a prepare_step() awaits its apply_step()
  struct FusedEmaState {
    Tensor buffer;  // flat layout; undefined: no fused EMA
    double decay = 0.0;
  } ema_;

 private:
  Tensor step_scalars_;  // device values of the prepared step (CUDA)
};

}  // namespace vt::optim
