// Cosine schedule with either warmup convention (see the header).
#include "optim/schedule_cosine.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace vt::optim {

double CosineSchedule::at(double t) const {
  VT_CHECK(t >= 0, "[lr_schedule] negative time ", t);
  VT_CHECK(warmup_t >= 0 && total_t > warmup_t, "[lr_schedule] need 0 <= warmup < total, got ", warmup_t, " and ",
           total_t);
  if (t < warmup_t) return warmup_lr + t * (base_lr - warmup_lr) / warmup_t;
  const double tc = warmup_prefix ? t - warmup_t : t, T = warmup_prefix ? total_t - warmup_t : total_t;
  if (tc >= T) return min_lr;
  return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + std::cos(std::numbers::pi * tc / T));
}

double epoch_lr(const CosineSchedule& s, int64_t epoch, bool deit_lag) {
  const int64_t t = deit_lag ? std::max<int64_t>(epoch - 1, 0) : epoch;
  return s.at(static_cast<double>(t));
}

}  // namespace vt::optim
