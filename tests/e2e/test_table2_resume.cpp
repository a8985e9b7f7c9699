// Every Table 2 config, shrunk to run on the CPU (Fashion-MNIST, 28x28 gray with patch 4 → 7x7 patches + CLS,
// one block, the ImageNet-only augmentations off, per-epoch DeiT schedule kept): it starts, evaluates model and
// EMA, stops mid-epoch, and resumes with the same losses bit for bit as an uninterrupted run.
#include <gtest/gtest.h>

#include "test_util.h"

#include <filesystem>
#include <map>

#include "engine/trainer.h"
#include "training_runs.h"
#include "io/config.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

io::Config shrunk(const fs::path& yaml, const std::string& out) {
  // clang-format off
  return io::load_config(
      yaml.string(),
      {"data.dataset=fashion_mnist", "data.data_dir=" + vt::test::fmnist_dir(), "data.mixup=0", "data.cutmix=0",
       "data.aa=\"\"", "data.reprob=0", "data.aug_repeats=0", "data.train_limit=128", "data.test_limit=64",
       "model.img_size=28", "model.patch_size=4", "model.in_chans=1", "model.num_classes=10", "model.depth=1",
       "train.batch_size=32", "train.global_batch_size=0", "train.epochs=2", "train.device=cpu", "train.threads=2",
       "train.log_interval=1", "train.model_ema_decay=0.9", "schedule.warmup_epochs=1", "eval.batch_size=64",
       "train.output=" + out});
  // clang-format on
}

TEST(Table2Configs, EachStartsEvaluatesAndResumesExactlyOnTheCpu) {
  if (!fs::exists(vt::test::fmnist_dir())) GTEST_SKIP() << "Fashion-MNIST not installed";
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_table2_" + std::to_string(::getpid()));
  int seen = 0;
  for (const auto& e : fs::directory_iterator(fs::path(VT_SOURCE_DIR) / "configs" / "imagenet")) {
    if (e.path().stem().string().find("deit_tiny") != 0) continue;  // small differs only in width
    SCOPED_TRACE(e.path().string());
    ++seen;
    const engine::TrainSummary full = expect_exact_resume([&](const std::string& out) { return shrunk(e.path(), out); },
                                                          (dir / e.path().stem()).string(), 3);
    EXPECT_EQ(full.steps, 8);
    EXPECT_TRUE(full.test_ema.has_value());
  }
  EXPECT_EQ(seen, 12);  // the DeiT-T configs of configs/imagenet
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
