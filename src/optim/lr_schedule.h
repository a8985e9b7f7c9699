// Per-iteration learning-rate schedule: linear warmup from warmup_lr to base_lr over warmup_steps, then a cosine
// from base_lr down to min_lr at total_steps, flat at min_lr after. This is timm's CosineLRScheduler with
// t_in_epochs=False and warmup_prefix=True (one cycle): for t = step - warmup_steps, T = total_steps - warmup_steps,
//   lr = min_lr + 0.5·(base_lr - min_lr)·(1 + cos(π·t/T)).
#pragma once
#include <cstdint>

namespace vt::optim {

class LrSchedule {
 public:
  /// Throws unless 0 <= warmup_steps < total_steps and the rates are >= 0.
  LrSchedule(double base_lr, double warmup_lr, double min_lr, int64_t warmup_steps, int64_t total_steps);
  /// The learning rate for update number `step` (0-based): warmup_lr at 0, base_lr at warmup_steps, min_lr from
  /// total_steps on.
  double lr_at(int64_t step) const;

  double base_lr() const { return base_lr_; }
  double warmup_lr() const { return warmup_lr_; }
  double min_lr() const { return min_lr_; }
  int64_t warmup_steps() const { return warmup_steps_; }
  int64_t total_steps() const { return total_steps_; }

 private:
  double base_lr_, warmup_lr_, min_lr_;
  int64_t warmup_steps_, total_steps_;
};

}  // namespace vt::optim
