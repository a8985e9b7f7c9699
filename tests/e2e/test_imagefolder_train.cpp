// `vitrain train` on an ImageFolder through the threaded loader, with the whole DeiT recipe on (Mixup, CutMix,
// RandAugment, random erasing, repeated augmentation): a shrunk deit_tiny_mita_dwc config on a tiny JPEG tree
// written here trains, evaluates on val/, and a run stopped mid-epoch resumes with the same losses bit for bit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "data/image_writers.h"
#include "engine/trainer.h"
#include "io/config.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

// 3 classes x (8 train + 4 val) JPEGs of 40x40, each class its own colour pattern.
void write_tree(const fs::path& root) {
  for (int c = 0; c < 3; ++c) {
    for (const auto& [split, count] : {std::pair<std::string, int>{"train", 8}, {"val", 4}}) {
      const fs::path dir = root / split / ("class" + std::to_string(c));
      fs::create_directories(dir);
      for (int i = 0; i < count; ++i)
        write_jpeg_rgb((dir / (std::to_string(i) + ".jpg")).string(), pattern_rgb(40, 40, 10 * c + i % 3));
    }
  }
}

io::Config shrunk(const fs::path& data_dir, const std::string& out) {
  const fs::path yaml = fs::path(VT_SOURCE_DIR) / "configs" / "imagenet" / "deit_tiny_mita_dwc.yaml";
  return io::load_config(
      yaml.string(),
      {"data.dataset=imagefolder", "data.data_dir=" + data_dir.string(), "data.workers=2", "model.img_size=32",
       "model.patch_size=8", "model.num_classes=3", "model.embed_dim=48", "model.num_heads=3", "model.depth=1",
       "model.attention.m=4", "model.attention.k=4", "train.batch_size=8", "train.epochs=2", "train.device=cpu",
       "train.threads=2", "train.log_interval=1", "train.model_ema_decay=0.9", "schedule.warmup_epochs=1",
       "optim.lr_base=0.032", "eval.batch_size=8", "train.output=" + out});  // lr 5e-4 after warmup
}

std::map<int64_t, double> run(const io::Config& cfg, engine::TrainSummary& s) {
  std::map<int64_t, double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t step, double loss) { losses[step] = loss; };
  s = engine::train(cfg, hooks);
  return losses;
}

TEST(ImageFolderTraining, DeitRecipeTrainsEvaluatesAndResumesExactly) {
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_imagefolder_" + std::to_string(::getpid()));
  write_tree(dir / "data");
  const io::Config base = shrunk(dir / "data", (dir / "full").string());
  ASSERT_GT(base.data.mixup, 0);  // the recipe stays on: mixup, cutmix, RandAugment, erasing, repeats
  ASSERT_GT(base.data.cutmix, 0);
  ASSERT_FALSE(base.data.aa.empty());
  ASSERT_GT(base.data.reprob, 0);
  ASSERT_GT(base.data.aug_repeats, 0);

  engine::TrainSummary full, part;
  const auto expected = run(base, full);
  EXPECT_EQ(full.steps, 6);  // 24 train images (repeated-aug sampler keeps 24 per epoch) / batch 8 x 2 epochs
  EXPECT_EQ(full.test.count, 12);
  EXPECT_GE(full.test.top1, 0.0);
  EXPECT_LE(full.test.top1, 100.0);
  ASSERT_TRUE(full.test_ema.has_value());
  for (auto [k, v] : expected) EXPECT_TRUE(std::isfinite(v)) << "update " << k;

  io::Config cfg = shrunk(dir / "data", (dir / "resumed").string());
  cfg.train.max_steps = 4;  // mid-way through the second epoch
  auto got = run(cfg, part);
  EXPECT_TRUE(part.stopped_at_max_steps);
  cfg.train.max_steps = 0;
  cfg.train.resume = "auto";
  for (auto [k, v] : run(cfg, part)) got[k] = v;
  ASSERT_EQ(got.size(), expected.size());
  for (auto [k, v] : expected) EXPECT_EQ(got[k], v) << "update " << k;
  EXPECT_EQ(part.test.top1, full.test.top1);
  EXPECT_EQ(part.test.loss, full.test.loss);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
