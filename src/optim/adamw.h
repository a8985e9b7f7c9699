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
  void step() override;
  /// "exp_avg" (m) and "exp_avg_sq" (v), as torch names them.
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  double beta1() const { return beta1_; }
  double beta2() const { return beta2_; }
  double eps() const { return eps_; }
  /// Flat buffers only: later steps update just [begin, end) of the flat buffers (ZeRO-1: each rank its slice; the
  /// state outside the range is left as is). Offsets must be multiples of 4 (or the buffer's end).
  void set_flat_range(int64_t begin, int64_t end);
  /// Flat buffers only: the flat state buffers {exp_avg, exp_avg_sq} (created zero-filled when needed), so a
  /// sharded state can be gathered in place.
  std::vector<Tensor> flat_state_buffers();

 private:
  void flat_step();

  double beta1_, beta2_, eps_;
  int64_t range_begin_ = 0, range_end_ = -1;  // flat step range; end -1: the whole buffer
};

}  // namespace vt::optim
