// Shared by the tests that train (unit, cuda, e2e): a tiny Fashion-MNIST run's config, the per-update losses of
// a run, and the exact-resume check (a run stopped after some updates and resumed with --resume auto gives the
// same losses bit for bit and the same final evaluation).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>

#include "engine/trainer.h"
#include "io/config.h"
#include "test_util.h"

namespace vt::test {

/// 96 Fashion-MNIST images, batches of 16: 6 updates per epoch, 2 epochs; drop-path and the EMA exercise the RNG
/// and EMA state. Width `embed_dim` with 2 heads, depth 2, on `device` (the CPU with one thread).
inline io::Config tiny_training_config(const std::string& out, const std::string& device = "cpu",
                                       int64_t embed_dim = 32) {
  io::Config c = io::load_config(fmnist_base_path());
  c.model.embed_dim = embed_dim;
  c.model.depth = 2;
  c.model.num_heads = 2;
  c.model.drop_path_rate = 0.1;
  c.data.train_limit = 96;
  c.data.test_limit = 32;
  c.train.batch_size = 16;
  c.train.epochs = 2;
  c.train.device = device;
  if (device == "cpu") c.train.threads = 1;
  c.train.log_interval = 1;
  c.train.output = out;
  c.train.model_ema = true;
  c.train.model_ema_decay = 0.9;
  c.eval.batch_size = 32;
  c.schedule.warmup_epochs = 0.5;
  c.validate();
  return c;
}

/// Runs training and returns the loss of every update it ran, keyed by the global update number.
inline std::map<int64_t, double> run_losses(const io::Config& cfg, engine::TrainSummary* summary = nullptr) {
  std::map<int64_t, double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t step, double loss) { losses[step] = loss; };
  engine::TrainSummary s = engine::train(cfg, hooks);
  if (summary) *summary = s;
  return losses;
}

/// make_config(output_dir) builds the run's config; `out` is a prefix for the two runs' output folders.
/// Returns the uninterrupted run's summary (for further checks).
inline engine::TrainSummary expect_exact_resume(const std::function<io::Config(const std::string&)>& make_config,
                                                const std::string& out, int64_t stop_after) {
  engine::TrainSummary full, part;
  const auto expected = run_losses(make_config(out + "_full"), &full);
  io::Config cfg = make_config(out + "_resumed");
  cfg.train.max_steps = stop_after;
  auto got = run_losses(cfg, &part);
  EXPECT_TRUE(part.stopped_at_max_steps);
  cfg.train.max_steps = 0;
  cfg.train.resume = "auto";
  for (auto [k, v] : run_losses(cfg, &part)) got[k] = v;
  EXPECT_EQ(got.size(), expected.size());
  for (auto [k, v] : expected) EXPECT_EQ(got[k], v) << "update " << k;
  EXPECT_EQ(part.test.top1, full.test.top1);
  EXPECT_EQ(part.test.loss, full.test.loss);
  return full;
}

}  // namespace vt::test
