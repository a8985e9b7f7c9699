// The e2e tests' shared check: a run, and the same run stopped after `stop_after` updates and resumed with
// --resume auto, give the same per-update losses bit for bit and the same final test top-1 and loss.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>

#include "engine/trainer.h"
#include "io/config.h"

namespace vt::test {

/// Per-update losses of one training run (engine::train with an on_update hook); `s` receives its summary.
inline std::map<int64_t, double> run_losses(const io::Config& cfg, engine::TrainSummary& s) {
  std::map<int64_t, double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t step, double loss) { losses[step] = loss; };
  s = engine::train(cfg, hooks);
  return losses;
}

/// make_config(output_dir) builds the run's config; `out` is a prefix for the two runs' output folders.
/// Returns the uninterrupted run's summary (for further checks).
inline engine::TrainSummary expect_exact_resume(const std::function<io::Config(const std::string&)>& make_config,
                                                const std::string& out, int64_t stop_after) {
  engine::TrainSummary full, part;
  const auto expected = run_losses(make_config(out + "_full"), full);
  io::Config cfg = make_config(out + "_resumed");
  cfg.train.max_steps = stop_after;
  auto got = run_losses(cfg, part);
  EXPECT_TRUE(part.stopped_at_max_steps);
  cfg.train.max_steps = 0;
  cfg.train.resume = "auto";
  for (auto [k, v] : run_losses(cfg, part)) got[k] = v;
  EXPECT_EQ(got.size(), expected.size());
  for (auto [k, v] : expected) EXPECT_EQ(got[k], v) << "update " << k;
  EXPECT_EQ(part.test.top1, full.test.top1);
  EXPECT_EQ(part.test.loss, full.test.loss);
  return full;
}

}  // namespace vt::test
