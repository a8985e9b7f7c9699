// Optimizer base: parameter groups, the learning rate, per-parameter state slots, and the flat named-tensor
// form of that state used by checkpoints. Subclasses (AdamW, SGD) only write the update rule.
// Also gradient clipping by global norm (clip_grad.cpp), which every training loop calls before step().
//
// Parameters on a CUDA device always use flat buffers (flat_buffers.h): the constructor re-points them into one
// buffer, gradients are views of one gradient buffer, the state is flat too, and step() is one kernel launch
// with no host synchronization. On the CPU the per-tensor path is the default; use_flat_buffers() opts in.
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

  /// One update of every parameter that has a gradient (parameters without one are skipped, as in torch).
  virtual void step() = 0;
  /// Drops the gradients (torch's default set_to_none), or zero-fills them in place to keep views into a
  /// flat gradient buffer valid. With flat buffers both forms zero the flat gradient buffer in one fill.
  void zero_grad(bool set_to_none = true);

  /// Clips the gradients by their global L2 norm as clip_grad_norm() and returns the norm before clipping as a
  /// 0-d tensor on the parameters' device. On CUDA the norm is computed on the device and the clip is applied
  /// inside the next step() (the gradient buffer itself is left unscaled), with no host synchronization: read
  /// the norm (item()) only when logging. Call it after backward and before step(); the last call counts.
  Tensor clip_grad_norm(double max_norm);

  /// Moves parameters, gradients and state into flat buffers (see flat_buffers.h); the constructor does it for
  /// parameters on CUDA. Needs one device and dtype, at most 8 groups, and no state yet. Afterwards every
  /// parameter takes part in every step (a missing gradient counts as zero, like torch with set_to_none=False).
  void use_flat_buffers();
  /// The flat buffers, or nullptr on the per-tensor path.
  const FlatBuffers* flat() const { return flat_.get(); }

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
  /// Before a flat step: gradients back in the flat buffer, every parameter's step count advanced; returns t.
  int64_t begin_flat_step();
  /// The device clip of the last clip_grad_norm() call (norm undefined when none), consumed by a step.
  struct PendingClip {
    Tensor norm;
    double max_norm = 0.0;
  };
  PendingClip take_pending_clip();

  int64_t step_count_ = 0;
  std::vector<int64_t> param_steps_;                 // updates applied to each parameter
  std::vector<std::map<std::string, Tensor>> slots_;  // per parameter: slot name -> tensor
  std::unique_ptr<FlatBuffers> flat_;
  std::map<std::string, Tensor> flat_slots_;          // slot name -> flat buffer (flat mode)
  PendingClip pending_clip_;
  Tensor norm_workspace_;                             // partial sums of the device grad norm
};

}  // namespace vt::optim
