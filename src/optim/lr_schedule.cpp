// Warmup + cosine and warmup + polynomial learning-rate schedules.
#include "optim/lr_schedule.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace vt::optim {

LrSchedule::LrSchedule(double base_lr, double warmup_lr, double min_lr, int64_t warmup_steps, int64_t total_steps)
    : base_lr_(base_lr),
      warmup_lr_(warmup_lr),
      min_lr_(min_lr),
      warmup_steps_(warmup_steps),
      total_steps_(total_steps) {
  VT_CHECK(warmup_steps >= 0 && total_steps > warmup_steps, "[lr_schedule] need 0 <= warmup_steps < total_steps, got ",
           warmup_steps, " and ", total_steps);
  VT_CHECK(base_lr >= 0 && min_lr >= 0 && warmup_lr >= 0, "[lr_schedule] learning rates must be >= 0, got base ",
           base_lr, ", warmup ", warmup_lr, ", min ", min_lr);
}

double LrSchedule::lr_at(int64_t step) const {
  VT_CHECK(step >= 0, "[lr_schedule] negative step ", step);
  if (step < warmup_steps_)
    return warmup_lr_ + static_cast<double>(step) * (base_lr_ - warmup_lr_) / static_cast<double>(warmup_steps_);
  const int64_t t = step - warmup_steps_, T = total_steps_ - warmup_steps_;
  if (t >= T) return min_lr_;
  return min_lr_ + 0.5 * (base_lr_ - min_lr_) *
                       (1.0 + std::cos(std::numbers::pi * static_cast<double>(t) / static_cast<double>(T)));
}

double PolySchedule::at(double t) const {
  VT_CHECK(t >= 0, "[lr_schedule] negative time ", t);
  VT_CHECK(warmup_t >= 0 && total_t > warmup_t, "[lr_schedule] need 0 <= warmup < total, got ", warmup_t, " and ",
           total_t);
  VT_CHECK(power > 0, "[lr_schedule] poly power must be > 0, got ", power);
  if (t < warmup_t) return warmup_lr + t * (base_lr - warmup_lr) / warmup_t;
  const double tc = t - warmup_t, T = total_t - warmup_t;
  if (tc >= T) return min_lr;
  return (base_lr - min_lr) * std::pow(1.0 - tc / T, power) + min_lr;
}

}  // namespace vt::optim
