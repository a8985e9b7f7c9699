// Every Table 2 config, shrunk to run on the CPU (Fashion-MNIST, 28x28 gray with patch 4 → 7x7 patches + CLS,
// one block, the ImageNet-only augmentations off, per-epoch DeiT schedule kept): it starts, evaluates model and
// EMA, stops mid-epoch, and resumes with the same losses bit for bit as an uninterrupted run.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "engine/trainer.h"
#include "io/config.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

io::Config shrunk(const fs::path& yaml, const std::string& out) {
  return io::load_config(
      yaml.string(),
      {"data.dataset=fashion_mnist", "data.data_dir=" + io::Config().data.data_dir, "data.mixup=0", "data.cutmix=0",
       "data.aa=\"\"", "data.reprob=0", "data.aug_repeats=0", "data.train_limit=128", "data.test_limit=64",
       "model.img_size=28", "model.patch_size=4", "model.in_chans=1", "model.num_classes=10", "model.depth=1",
       "train.batch_size=32", "train.epochs=2", "train.device=cpu", "train.threads=2", "train.log_interval=1",
       "train.model_ema_decay=0.9", "schedule.warmup_epochs=1", "eval.batch_size=64", "train.output=" + out});
}

std::map<int64_t, double> run(const io::Config& cfg, engine::TrainSummary& s) {
  std::map<int64_t, double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t step, double loss) { losses[step] = loss; };
  s = engine::train(cfg, hooks);
  return losses;
}

TEST(Table2Configs, EachStartsEvaluatesAndResumesExactlyOnTheCpu) {
  if (!fs::exists(io::Config().data.data_dir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_table2_" + std::to_string(::getpid()));
  int seen = 0;
  for (const auto& e : fs::directory_iterator(fs::path(VT_SOURCE_DIR) / "configs" / "imagenet")) {
    if (e.path().stem().string().find("deit_tiny") != 0) continue;  // small differs only in width
    SCOPED_TRACE(e.path().string());
    ++seen;
    const std::string name = e.path().stem().string();
    engine::TrainSummary full, part;
    const auto expected = run(shrunk(e.path(), (dir / (name + "_full")).string()), full);
    EXPECT_EQ(full.steps, 8);
    ASSERT_TRUE(full.test_ema.has_value());
    io::Config cfg = shrunk(e.path(), (dir / (name + "_resumed")).string());
    cfg.train.max_steps = 3;
    auto got = run(cfg, part);
    EXPECT_TRUE(part.stopped_at_max_steps);
    cfg.train.max_steps = 0;
    cfg.train.resume = "auto";
    for (auto [k, v] : run(cfg, part)) got[k] = v;
    ASSERT_EQ(got.size(), expected.size());
    for (auto [k, v] : expected) EXPECT_EQ(got[k], v) << "update " << k;
    EXPECT_EQ(part.test.top1, full.test.top1);
  }
  EXPECT_EQ(seen, 7);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
