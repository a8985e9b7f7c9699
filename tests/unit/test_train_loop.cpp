// The training loop (engine/train_loop.h) over a task that is neither image task: a linear classifier of fixed
// feature rows, whose loss is the mean over rows, so an update of 2 micro-batches of 4 is exactly an update of one
// batch of 8. What it checks is the loop's, the same for every task: gradient accumulation, the EMA after every
// update, and an exact resume in the middle of an epoch of accumulated updates.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "core/rng.h"
#include "engine/checkpoint.h"
#include "engine/train_loop.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

constexpr int64_t kRows = 32, kFeatures = 4, kClasses = 3;

class RowsTask final : public engine::TrainTask {
 public:
  explicit RowsTask(const io::Config& cfg) : batch_(cfg.train.batch_size) {
    Generator gen(5);
    features_ = Tensor::empty({kRows, kFeatures});
    ops::normal_(features_, 0, 1, gen);
    std::vector<double> labels;
    for (int64_t i = 0; i < kRows; ++i) labels.push_back(static_cast<double>((i * 7) % kClasses));
    labels_ = Tensor::from_vector(labels, {kRows}, DType::i64);
    Generator init(3);
    model_.emplace(kFeatures, kClasses, true, init);
    if (cfg.train.model_ema) ema_.emplace(kFeatures, kClasses, true, init);
  }
  nn::Module& model() override { return *model_; }
  nn::Module* ema_model() override { return ema_ ? &*ema_ : nullptr; }
  void load_initial_weights() override {}
  int64_t batches_per_epoch() const override { return kRows / batch_; }
  void begin_epoch(int64_t epoch, int64_t first) override {
    epoch_ = epoch;
    next_ = first;
  }
  engine::TaskBatch next_batch() override {
    // Epoch e reads the rows rotated by 8e, so the epochs differ (and not with the batch size).
    const int64_t start = (next_++ * batch_ + epoch_ * 8) % kRows;
    return {features_.slice(0, start, start + batch_).contiguous(),
            labels_.slice(0, start, start + batch_).contiguous()};
  }
  Tensor loss(const engine::TaskBatch& b) override { return ops::cross_entropy(model_->forward(b.input), b.target); }
  engine::TaskEvaluation evaluate() override {
    engine::TaskEvaluation e;
    e.value = ops::cross_entropy(model_->forward(features_), labels_).item();
    e.line = "loss " + std::to_string(e.value);
    e.scores = {{"rows_loss", e.value}};
    return e;
  }
  bool better(double value, double best) const override { return value < best; }
  std::string best_text(double best) const override { return "best loss " + std::to_string(best); }

  const nn::Linear& linear() const { return *model_; }

 private:
  int64_t batch_, epoch_ = 0, next_ = 0;
  Tensor features_, labels_;
  std::optional<nn::Linear> model_, ema_;
};

io::Config rows_config(const std::string& out, int batch, int accum) {
  io::Config c;
  c.train.output = out;
  c.data.data_dir = out;  // the rows are made here; the loop only asks that a data folder is named
  c.train.global_batch_size = 0;
  c.train.device = "cpu";
  c.train.threads = 1;
  c.train.epochs = 2;
  c.train.batch_size = batch;
  c.train.grad_accum_steps = accum;
  c.train.log_interval = 1;
  c.optim.lr = 0.05;
  c.schedule.warmup_epochs = 0.5;
  c.schedule.warmup_lr = 1e-5;  // short per-update schedules, as the test was written against
  c.schedule.sched_on_updates = true;
  c.schedule.warmup_prefix = true;
  c.schedule.deit_epoch_lag = false;
  c.train.model_ema = false;
  c.validate();
  return c;
}

// Trains `cfg` on a RowsTask; returns each update's loss. `after_update` sees the task after every update.
std::map<int64_t, double> train_rows(const io::Config& cfg, engine::RunSummary* summary = nullptr,
                                     const std::function<void(const RowsTask&)>& after_update = {}) {
  std::optional<RowsTask> task;
  std::map<int64_t, double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t step, double loss) {
    losses[step] = loss;
    if (after_update) after_update(*task);
  };
  const engine::RunSummary s =
      engine::train_loop(cfg, hooks, [&](const engine::RunStart&) -> engine::TrainTask& { return task.emplace(cfg); });
  if (summary) *summary = s;
  return losses;
}

std::vector<double> values(const io::NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t.to_vector();
  ADD_FAILURE() << "no tensor " << name;
  return {};
}

TEST(TrainLoop, TwoAccumulatedMicroBatchesMakeTheUpdateOfTheirUnion) {
  TempDir dir;
  const auto big = train_rows(rows_config(dir.file("big"), 8, 1));
  const auto small = train_rows(rows_config(dir.file("small"), 4, 2));
  ASSERT_EQ(big.size(), 8u);  // 32 rows / 8 per update × 2 epochs
  ASSERT_EQ(small.size(), big.size());
  for (auto [k, v] : big) EXPECT_NEAR(small.at(k), v, 1e-6) << "update " << k;
  const io::NamedTensors a = io::load_safetensors(dir.file("big/model.safetensors"));
  const io::NamedTensors b = io::load_safetensors(dir.file("small/model.safetensors"));
  for (const char* name : {"weight", "bias"}) {
    const std::vector<double> x = values(a, name), y = values(b, name);
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-6) << name << "[" << i << "]";
  }
}

TEST(TrainLoop, TheEmaStartsAsTheModelAndAveragesItAfterEveryUpdate) {
  TempDir dir;
  io::Config cfg = rows_config(dir.file("ema"), 8, 1);
  cfg.train.model_ema = true;
  cfg.train.model_ema_decay = 0.75;
  // timm's ModelEmaV2 in double: the model's starting weights, then ema = 0.75 ema + 0.25 w after every update.
  std::vector<double> ema = RowsTask(cfg).linear().weight.to_vector();
  int updates = 0;
  train_rows(cfg, nullptr, [&](const RowsTask& t) {
    const std::vector<double> w = t.linear().weight.to_vector();
    for (size_t i = 0; i < w.size(); ++i) ema[i] = 0.75 * ema[i] + 0.25 * w[i];
    ++updates;
  });
  EXPECT_EQ(updates, 8);
  const engine::Checkpoint last = engine::load_checkpoint(dir.file("ema/last.safetensors"));
  const std::vector<double> got = values(last.ema, "weight"), model = values(last.model, "weight");
  ASSERT_EQ(got.size(), ema.size());
  double apart = 0;
  for (size_t i = 0; i < ema.size(); ++i) {
    EXPECT_NEAR(got[i], ema[i], 1e-6) << "weight[" << i << "]";
    apart = std::max(apart, std::abs(got[i] - model[i]));
  }
  EXPECT_GT(apart, 1e-3);  // the average lags the trained weights
}

// Stopped by train.max_steps after update 3 of an epoch of 4 accumulated updates (micro-batch 6 of 8 is next) and
// resumed: the same losses and weights bit for bit.
TEST(TrainLoop, AnAccumulatedRunStoppedMidEpochResumesExactly) {
  TempDir dir;
  auto config = [&](const std::string& out) {
    io::Config c = rows_config(dir.file(out), 4, 2);
    c.train.model_ema = true;
    c.train.model_ema_decay = 0.75;
    return c;
  };
  const auto full = train_rows(config("full"));
  io::Config cfg = config("split");
  cfg.train.max_steps = 3;
  engine::RunSummary stopped;
  auto got = train_rows(cfg, &stopped);
  EXPECT_TRUE(stopped.stopped_at_max_steps);
  EXPECT_EQ(got.size(), 3u);
  cfg.train.max_steps = 0;
  cfg.train.resume = "auto";
  for (auto [k, v] : train_rows(cfg)) got[k] = v;
  ASSERT_EQ(got.size(), full.size());
  for (auto [k, v] : full) EXPECT_EQ(got.at(k), v) << "update " << k;
  const engine::Checkpoint a = engine::load_checkpoint(dir.file("full/last.safetensors"));
  const engine::Checkpoint b = engine::load_checkpoint(dir.file("split/last.safetensors"));
  for (const char* name : {"weight", "bias"}) {
    EXPECT_EQ(values(a.model, name), values(b.model, name)) << name;
    EXPECT_EQ(values(a.ema, name), values(b.ema, name)) << "EMA " << name;
  }
}

}  // namespace
}  // namespace vt::test
