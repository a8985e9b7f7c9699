// Per-iteration learning-rate schedule: linear warmup from warmup_lr to base_lr over warmup_steps, then a cosine
// from base_lr down to min_lr at total_steps, flat at min_lr after. This is timm's CosineLRScheduler with
// t_in_epochs=False and warmup_prefix=True (one cycle): for t = step - warmup_steps, T = total_steps - warmup_steps,
//   lr = min_lr + 0.5·(base_lr - min_lr)·(1 + cos(π·t/T)).
// PolySchedule is the polynomial decay of mmseg / Segmenter (segm/optim/scheduler.py PolynomialLR) with the same
// optional warmup prefix: lr = (base_lr - min_lr)·(1 - t/T)^power + min_lr.
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

/// Polynomial decay in any time unit (updates for Segmenter, which steps it every iteration): during the warmup
/// warmup_lr + t·(base_lr - warmup_lr)/warmup_t, then (base_lr - min_lr)·(1 - t'/T')^power + min_lr with
/// t' = t - warmup_t, T' = total_t - warmup_t; min_lr from total_t on.
struct PolySchedule {
  double base_lr = 0, warmup_lr = 0, min_lr = 0;
  double power = 0.9;
  double warmup_t = 0;  ///< warmup length in the unit of t (0: none, as Segmenter)
  double total_t = 1;   ///< schedule length (Segmenter: iter_max = updates per epoch × epochs)

  /// The learning rate at time t >= 0. Throws on negative t, power <= 0 or an inconsistent schedule.
  double at(double t) const;
};

}  // namespace vt::optim
