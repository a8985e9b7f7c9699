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

 private:
  void flat_step();

  double beta1_, beta2_, eps_;
};

}  // namespace vt::optim
