// The ImageFolder path data-parallel (2 ranks as threads, ThreadCommunicator) with the whole DeiT recipe
// (repeated-augmentation sampler per rank, Mixup/CutMix, RandAugment, erasing): it trains, and its distributed
// evaluation counts every val/ image exactly once, so its totals equal a single-process evaluation of the saved
// weights (top-1 exactly; the mean loss to f64 rounding of the other summation order). A stopped and resumed
// 2-rank run gives the uninterrupted run's weights bit for bit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "data/image_writers.h"
#include "ddp_runs.h"
#include "engine/trainer.h"
#include "io/config.h"
#include "io/safetensors.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

// 3 classes x (8 train + 5 val) JPEGs of 40x40: 15 val images, an odd count the 2 ranks split 8 / 7.
void write_tree(const fs::path& root) {
  for (int c = 0; c < 3; ++c)
    for (const auto& [split, count] : {std::pair<std::string, int>{"train", 8}, {"val", 5}}) {
      const fs::path dir = root / split / ("class" + std::to_string(c));
      fs::create_directories(dir);
      for (int i = 0; i < count; ++i)
        write_jpeg_rgb((dir / (std::to_string(i) + ".jpg")).string(), pattern_rgb(40, 40, 10 * c + i % 3));
    }
}

io::Config shrunk(const fs::path& data_dir, const std::string& out) {
  const fs::path yaml = fs::path(VT_SOURCE_DIR) / "configs" / "imagenet" / "deit_tiny_mita_dwc.yaml";
  // clang-format off
  return io::load_config(
      yaml.string(),
      {"data.dataset=imagefolder", "data.data_dir=" + data_dir.string(), "data.workers=1", "model.img_size=32",
       "model.patch_size=8", "model.num_classes=3", "model.embed_dim=48", "model.num_heads=3", "model.depth=1",
       "model.attention.m=4", "model.attention.k=4", "model.drop_path_rate=0", "train.batch_size=4",
       "train.global_batch_size=0", "train.epochs=3", "train.device=cpu", "train.threads=1", "train.log_interval=1",
       "train.model_ema_decay=0.9", "schedule.warmup_epochs=1", "optim.lr_base=0.032", "eval.batch_size=3",
       "train.output=" + out});
  // clang-format on
}

TEST(ImageFolderDdp, TwoRanksTrainAndEvaluateEveryValImageOnce) {
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_imagefolder_ddp_" + std::to_string(::getpid()));
  write_tree(dir / "data");
  const io::Config cfg = shrunk(dir / "data", (dir / "full").string());
  ASSERT_GT(cfg.data.aug_repeats, 0);
  const std::vector<engine::TrainSummary> ranks = train_ranks(cfg, 2);
  const engine::TrainSummary& full = ranks[0];
  EXPECT_EQ(full.steps, 9);  // 24 images x 3 repeats / 2 ranks, DeiT-rounded: 3 updates of 2 x 4 per epoch
  EXPECT_EQ(full.test.count, 15);
  EXPECT_EQ(ranks[1].test.count, 15);
  EXPECT_EQ(ranks[1].test.loss, full.test.loss);  // the same totals on every rank
  EXPECT_TRUE(std::isfinite(full.test.loss));
  const engine::EvalResult alone = engine::evaluate_weights(cfg, full.weights_path);
  EXPECT_EQ(alone.count, 15);
  EXPECT_DOUBLE_EQ(alone.top1, full.test.top1);
  EXPECT_DOUBLE_EQ(alone.top5, full.test.top5);
  EXPECT_NEAR(alone.loss, full.test.loss, 1e-6);

  io::Config part = shrunk(dir / "data", (dir / "part").string());
  part.train.max_steps = full.steps / 2 + 1;
  EXPECT_TRUE(train_ranks(part, 2)[0].stopped_at_max_steps);
  part.train.max_steps = 0;
  part.train.resume = "auto";
  const engine::TrainSummary resumed = train_ranks(part, 2)[0];
  auto a = io::load_safetensors(full.weights_path), b = io::load_safetensors(resumed.weights_path);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].second.to_vector(), b[i].second.to_vector()) << a[i].first;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
