// Global batch, LR scaling, LR per update, and the trainer's refusal of recipe keys it cannot honour yet.
#include "engine/recipe.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace vt::engine {

int64_t global_batch(const io::Config& cfg) {
  return static_cast<int64_t>(cfg.train.batch_size) * cfg.train.grad_accum_steps;
}

double resolved_lr(const io::Config& cfg) {
  const auto& o = cfg.optim;
  if (o.lr_base <= 0) return o.lr;
  const double ratio = static_cast<double>(global_batch(cfg)) / static_cast<double>(o.lr_base_size);
  return o.lr_base * (o.lr_base_scale == "sqrt" ? std::sqrt(ratio) : ratio);
}

LrPlan::LrPlan(const io::Config& cfg, int64_t updates_per_epoch)
    : on_updates_(cfg.schedule.sched_on_updates), deit_lag_(cfg.schedule.deit_epoch_lag) {
  const auto& s = cfg.schedule;
  sched_.base_lr = resolved_lr(cfg);
  sched_.warmup_lr = s.warmup_lr;
  sched_.min_lr = s.min_lr;
  sched_.warmup_prefix = s.warmup_prefix;
  if (on_updates_) {
    // Whole updates, as optim::LrSchedule, so this reproduces it exactly.
    sched_.warmup_t = static_cast<double>(static_cast<int64_t>(s.warmup_epochs * static_cast<double>(updates_per_epoch)));
    sched_.total_t = static_cast<double>(updates_per_epoch * cfg.train.epochs);
  } else {
    sched_.warmup_t = s.warmup_epochs;
    sched_.total_t = cfg.train.epochs;
  }
  VT_CHECK(sched_.total_t > sched_.warmup_t, "[config] schedule.warmup_epochs (", s.warmup_epochs,
           ") must be shorter than the run (", cfg.train.epochs, " epochs)");
}

double LrPlan::lr(int64_t global_step, int64_t epoch) const {
  if (on_updates_) return sched_.at(static_cast<double>(global_step));
  return optim::epoch_lr(sched_, epoch, deit_lag_);
}

void check_supported(const io::Config& cfg) {
  const auto& d = cfg.data;
  std::string missing;
  auto need = [&](bool used, const std::string& what) {
    if (used) missing += (missing.empty() ? "" : ", ") + what;
  };
  need(d.dataset != "fashion_mnist", "data.dataset: " + d.dataset);
  need(d.mixup > 0, "data.mixup");
  need(d.cutmix > 0, "data.cutmix");
  need(!d.aa.empty(), "data.aa (RandAugment)");
  need(d.reprob > 0, "data.reprob (random erasing)");
  need(d.aug_repeats > 0, "data.aug_repeats (repeated augmentation)");
  VT_CHECK(missing.empty(), "[train] this config needs the ImageNet loader (issue 6), which the trainer does not ",
           "drive yet: ", missing, ". Only data.dataset: fashion_mnist with these keys off can be trained today; "
           "the config itself parses and its model builds)");
}

}  // namespace vt::engine
