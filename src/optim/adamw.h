// AdamW with decoupled weight decay, the same update as torch.optim.AdamW (amsgrad off):
//   p -= lr·wd·p;  m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²;
//   p -= lr/(1-β1^t) · m / (sqrt(v)/sqrt(1-β2^t) + eps)
// with t counted per parameter. The weight decay comes from each parameter's group. With flat buffers (always on
// CUDA) all parameters step together in one launch, and a clip from clip_grad_norm() scales g inside it.
#pragma once
#include "optim/optimizer.h"

namespace vt::optim {

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<ParamGroup> groups, double lr, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8);
  /// "exp_avg" (m) and "exp_avg_sq" (v), as torch names them.
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  double beta1() const { return beta1_; }
  double beta2() const { return beta2_; }
  double eps() const { return eps_; }
  /// Flat buffers only (ZeRO-1): later steps update just [begin, end) of the flat buffers, and the state is kept for
  /// that range alone (end - begin values per slot). Offsets must be multiples of 4 (or the buffer's end). A state
  /// loaded whole (load_state) is cut down to the range at the next step.
  void set_flat_range(int64_t begin, int64_t end);
  /// Flat buffers only: the whole-size flat state buffers {exp_avg, exp_avg_sq} with this range's values in place
  /// and zeros elsewhere, ready to be all-gathered so state() can be read (checkpoints); release_full_state()
  /// drops them again.
  std::vector<Tensor> flat_state_buffers();
  /// Ranged mode: frees the whole-size state made by flat_state_buffers() or load_state (the range's part is kept).
  void release_full_state();
  /// Values of optimizer state held in memory now (both slots; the whole-size buffers when present).
  int64_t resident_state_numel() const;
  /// Also false in ranged mode (set_flat_range): the EMA would need the whole parameter buffer.
  bool can_fuse_ema() const override { return flat_ != nullptr && range_end_ < 0; }

 protected:
  void prepare_update() override;
  void apply_update() override;

 private:
  /// The flat update prepared by prepare_update(): one launch on CUDA, one loop per group on the CPU.
  void flat_step();
  /// Ranged mode: the range's state, taken from loaded whole-size buffers when they exist (then freed), else kept,
  /// else zeros.
  void ensure_range_state();
  /// Frees the whole-size state buffers and the per-parameter views of them.
  void drop_whole_state();

  double beta1_, beta2_, eps_;
  int64_t range_begin_ = 0, range_end_ = -1;      // flat step range; end -1: the whole buffer
  Tensor range_m_, range_v_;                      // ranged mode: exp_avg / exp_avg_sq of [range_begin_, range_end_)
  const TensorImpl* whole_from_range_ = nullptr;  // the whole-size exp_avg that flat_state_buffers() made
  struct PreparedScalars {
    double lr = 0.0, bias_correction1 = 1.0, bias_correction2_sqrt = 1.0;
  } prepared_scalars_;  // flat mode: the values of the prepared step, in double (the CPU loop's precision)
};

}  // namespace vt::optim
