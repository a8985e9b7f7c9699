// SGD with optional (Nesterov) momentum, the same update as torch.optim.SGD with dampening 0:
//   d = g + wd·p;  buf = d on the first step, else momentum·buf + d;  d = nesterov ? d + momentum·buf : buf;
//   p -= lr·d
#pragma once
#include "optim/optimizer.h"

namespace vt::optim {

class SGD : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, double lr, double momentum = 0.0, bool nesterov = false);
  /// "momentum_buffer" (only when momentum > 0).
  std::vector<std::string> slot_names() const override { return {"momentum_buffer"}; }
  double momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }

 protected:
  void prepare_update() override;
  void apply_update() override;

 private:
  /// The flat update prepared by prepare_update(): one launch on CUDA, one loop per group on the CPU.
  void flat_step();

  double momentum_;
  bool nesterov_;
  bool first_step_ = false;  // flat mode: the prepared step starts the momentum buffer
};

}  // namespace vt::optim
