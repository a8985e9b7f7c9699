// The trainer as a data-parallel job of ranks as threads (TrainHooks::communicator with ThreadCommunicator), on
// the tiny Fashion-MNIST run: 2 ranks × batch 8 train on exactly the batches of 1 process × batch 16 (each rank
// takes its rows of the global batch), so the weights agree to f32 rounding of the different summation order
// (1e-5 after 12 AdamW updates of weights of order 0.1). Evaluation totals count every test image once. A ZeRO-1
// run stopped and resumed gives the same weights bit for bit.
#include <gtest/gtest.h>

#include "test_util.h"

#include <csignal>
#include <cmath>
#include <filesystem>
#include <map>

#include "ddp_runs.h"
#include "engine/trainer.h"
#include "io/safetensors.h"
#include "io_temp_dir.h"
#include "training_runs.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

bool have_data() { return fs::exists(vt::test::fmnist_dir()); }

io::Config ddp_config(const std::string& out, int batch) {
  io::Config c = tiny_training_config(out);
  c.model.drop_path_rate = 0.0;  // the dropout stream is per process: keep the runs comparable
  c.train.batch_size = batch;
  c.validate();
  return c;
}

double max_weight_diff(const std::string& a, const std::string& b) {
  auto ta = io::load_safetensors(a), tb = io::load_safetensors(b);
  EXPECT_EQ(ta.size(), tb.size());
  double m = 0;
  for (size_t i = 0; i < ta.size() && i < tb.size(); ++i) {
    auto va = ta[i].second.to_vector(), vb = tb[i].second.to_vector();
    for (size_t j = 0; j < va.size(); ++j) m = std::max(m, std::abs(va[j] - vb[j]));
  }
  return m;
}

TEST(DdpTrainer, TwoRanksOfBatch8MatchOneProcessOfBatch16) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  const engine::TrainSummary one = engine::train(ddp_config(dir.file("one"), 16));
  const engine::TrainSummary two = train_ranks(ddp_config(dir.file("two"), 8), 2)[0];
  EXPECT_EQ(two.steps, one.steps);
  EXPECT_EQ(two.test.count, one.test.count);  // every test image counted once across the ranks
  EXPECT_NEAR(two.test.loss, one.test.loss, 1e-4);
  EXPECT_LE(max_weight_diff(one.weights_path, two.weights_path), 1e-5);
}

TEST(DdpTrainer, ZeroOneRunStoppedAndResumedMatchesTheUninterruptedRun) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config full = ddp_config(dir.file("full"), 8);
  full.dist.zero1 = true;
  const engine::TrainSummary a = train_ranks(full, 2)[0];
  io::Config part = ddp_config(dir.file("part"), 8);
  part.dist.zero1 = true;
  part.train.max_steps = 4;
  EXPECT_TRUE(train_ranks(part, 2)[0].stopped_at_max_steps);
  part.train.max_steps = 0;
  part.train.resume = "auto";
  const engine::TrainSummary b = train_ranks(part, 2)[0];
  EXPECT_EQ(max_weight_diff(a.weights_path, b.weights_path), 0.0);
  EXPECT_EQ(a.test.loss, b.test.loss);
}

// A signal that reaches one rank only (here rank 1, through TrainHooks::stop_signal) stops every rank at the
// same update; rank 0 writes the recovery checkpoint and the job resumes to the uninterrupted weights.
TEST(DdpTrainer, ASignalOnOneRankStopsAllRanksAtTheSameUpdate) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config full = ddp_config(dir.file("full"), 8);
  full.dist.zero1 = true;
  const engine::TrainSummary a = train_ranks(full, 2)[0];
  io::Config part = ddp_config(dir.file("part"), 8);
  part.dist.zero1 = true;
  std::vector<engine::TrainSummary> stopped(2);
  run_ranks(2, [&](dist::ThreadCommunicator& comm) {
    int64_t done = 0;
    engine::TrainHooks hooks;
    hooks.communicator = &comm;
    hooks.on_update = [&](int64_t step, double) { done = step; };
    hooks.stop_signal = [&] { return comm.rank() == 1 && done >= 4 ? SIGTERM : 0; };
    stopped[static_cast<size_t>(comm.rank())] = engine::train(part, hooks);
  });
  for (const auto& s : stopped) {
    EXPECT_EQ(s.stop_signal, SIGTERM);
    EXPECT_EQ(s.steps, 4);
  }
  ASSERT_TRUE(fs::exists(dir.file("part/recovery.safetensors")));
  part.train.resume = "auto";
  const engine::TrainSummary b = train_ranks(part, 2)[0];
  EXPECT_EQ(b.stop_signal, 0);
  EXPECT_EQ(max_weight_diff(a.weights_path, b.weights_path), 0.0);
}

// The CPU twin of the CUDA one-rank NCCL test: a job of one rank takes the whole data-parallel path (flat buffers,
// bucket hooks, one-rank collectives, ZeRO-1's ranged step over everything) and must not change a bit.
TEST(DdpTrainer, OneRankJobMatchesThePlainRunBitwise) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config cfg = tiny_training_config(dir.file("plain"));
  engine::TrainSummary plain_summary;
  const auto plain = run_losses(cfg, &plain_summary);
  for (bool zero1 : {false, true}) {
    cfg.train.output = dir.file(zero1 ? "zero1" : "ddp");
    cfg.dist.zero1 = zero1;
    cfg.dist.bucket_mb = 0.01;
    dist::ThreadCommunicator comm(std::make_shared<dist::ThreadGroup>(1), 0);
    std::map<int64_t, double> losses;
    engine::TrainHooks hooks;
    hooks.communicator = &comm;
    hooks.on_update = [&](int64_t step, double loss) { losses[step] = loss; };
    const engine::TrainSummary s = engine::train(cfg, hooks);
    EXPECT_EQ(losses, plain) << (zero1 ? "zero1" : "ddp");
    EXPECT_EQ(max_weight_diff(s.weights_path, plain_summary.weights_path), 0.0);
  }
}

}  // namespace
}  // namespace vt::test
