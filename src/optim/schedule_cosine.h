// Cosine learning-rate schedule in any time unit (updates or epochs), with the two warmup conventions found in
// the wild: timm's warmup_prefix=True (the cosine starts after the warmup; optim/lr_schedule.h is this case in
// updates) and timm 0.4.12 / DeiT's default (the cosine is evaluated at t itself; the warmup only replaces its
// first warmup_t units). For t >= total_t the rate is min_lr.
#pragma once
#include <cstdint>

namespace vt::optim {

struct CosineSchedule {
  double base_lr = 0, warmup_lr = 0, min_lr = 0;
  double warmup_t = 0;  ///< warmup length in the unit of t (may be fractional)
  double total_t = 1;   ///< schedule length (t_initial) in the unit of t
  bool warmup_prefix = true;

  /// The learning rate at time t >= 0: warmup_lr + t·(base_lr - warmup_lr)/warmup_t during the warmup, then
  /// min_lr + ½(base_lr - min_lr)(1 + cos(π·t'/T')) with t' = t - warmup_t, T' = total_t - warmup_t when
  /// warmup_prefix, else t' = t, T' = total_t. Throws on negative t or an inconsistent schedule.
  double at(double t) const;
};

/// The per-epoch rate of epoch `epoch` (0-based): lr(epoch), or with `deit_lag` lr(max(epoch - 1, 0)) as DeiT's
/// main.py, which calls lr_scheduler.step(epoch) after epoch `epoch`, so epochs 0 and 1 both run at lr(0).
double epoch_lr(const CosineSchedule& s, int64_t epoch, bool deit_lag);

}  // namespace vt::optim
