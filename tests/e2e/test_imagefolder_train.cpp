// `vitrain train` on an ImageFolder through the threaded loader, with the whole DeiT recipe on (Mixup, CutMix,
// RandAugment, random erasing, repeated augmentation): every Table 2 config, shrunk, on a tiny JPEG tree written
// here trains, evaluates on val/, and a run stopped mid-epoch resumes with the same losses bit for bit; the saved
// weights evaluated alone (`vitrain eval`'s path) give the run's final numbers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "data/hostile_images.h"
#include "data/image_writers.h"
#include "engine/trainer.h"
#include "io/config.h"
#include "training_runs.h"

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

const fs::path kConfigs = fs::path(VT_SOURCE_DIR) / "configs" / "imagenet";

// 32x32 inputs with patch 8: a 4x4 patch grid + CLS, so MiTA pools 2x2 landmarks, Agent uses 4 agents and BRA cuts
// the grid into 2x2 regions, each routed to 2.
io::Config shrunk(const fs::path& data_dir, const std::string& out,
                  const fs::path& yaml = kConfigs / "deit_tiny_mita_dwc.yaml") {
  // clang-format off
  return io::load_config(
      yaml.string(),
      {"data.dataset=imagefolder", "data.data_dir=" + data_dir.string(), "data.workers=2", "model.img_size=32",
       "model.patch_size=8", "model.num_classes=3", "model.embed_dim=48", "model.num_heads=3", "model.depth=1",
       "model.attention.m=4", "model.attention.k=4", "model.attention.agent_num=4", "model.attention.n_win=2",
       "model.attention.topk=2", "train.batch_size=8",
       "train.global_batch_size=0", "train.epochs=2", "train.device=cpu", "train.threads=2", "train.log_interval=1",
       "train.model_ema_decay=0.9", "schedule.warmup_epochs=1", "optim.lr_base=0.032", "eval.batch_size=8",
       "train.output=" + out});  // lr 5e-4 after warmup
  // clang-format on
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

  // Stopped after update 4: mid-way through the second epoch.
  const engine::TrainSummary full =
      expect_exact_resume([&](const std::string& out) { return shrunk(dir / "data", out); }, (dir / "run").string(), 4);
  EXPECT_EQ(full.steps, 6);  // 24 train images (repeated-aug sampler keeps 24 per epoch) / batch 8 x 2 epochs
  EXPECT_EQ(full.test.count, 12);
  EXPECT_GE(full.test.top1, 0.0);
  EXPECT_LE(full.test.top1, 100.0);
  EXPECT_TRUE(std::isfinite(full.test.loss));
  ASSERT_TRUE(full.test_ema.has_value());

  // `vitrain eval` on val/: the saved weights alone reproduce the run's final evaluation.
  const engine::EvalResult alone = engine::evaluate_weights(base, full.weights_path);
  EXPECT_EQ(alone.count, 12);
  EXPECT_DOUBLE_EQ(alone.top1, full.test.top1);
  EXPECT_DOUBLE_EQ(alone.top5, full.test.top5);
  EXPECT_NEAR(alone.loss, full.test.loss, 1e-6);
  EXPECT_GT(alone.params, 0);
  // A val/ with more class folders than the model has outputs is refused, naming the folder.
  const fs::path extra = dir / "data" / "val" / "class3";
  fs::create_directories(extra);
  write_jpeg_rgb((extra / "0.jpg").string(), pattern_rgb(40, 40, 7));
  try {
    engine::evaluate_weights(base, full.weights_path);
    ADD_FAILURE() << "4 val classes for a 3-class model were accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("val has 4 class folders"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A bad file in train/ (a truncated JPEG, then a 65-byte PNG declaring 100000x100000 under the same name) is
// skipped and the run's metrics count it; data.max_bad_files = 0 stops the run with an error naming the file. A
// JPEG in val/ declaring 16000x16000 is left out of the evaluation and counted in its metrics row.
TEST(ImageFolderTraining, BadFilesAreSkippedCountedInMetricsOrStopTheRun) {
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_imagefolder_bad_" + std::to_string(::getpid()));
  write_tree(dir / "data");
  const fs::path bad = dir / "data" / "train" / "class1" / "bad.jpg";
  write_jpeg_declaring((dir / "data" / "val" / "class2" / "bomb.jpg").string(), 16000, 16000);
  for (const std::string kind : {"truncated", "png bomb"}) {
    SCOPED_TRACE(kind);
    if (kind == "truncated") {
      write_truncated_jpeg(bad.string(), 3);
    } else {
      write_png_declaring(bad.string(), 100000, 100000);
    }
    io::Config cfg = shrunk(dir / "data", (dir / ("run_" + kind)).string());
    cfg.train.epochs = 1;
    cfg.schedule.warmup_epochs = 0;
    engine::TrainSummary s;
    run_losses(cfg, &s);
    EXPECT_EQ(s.test.count, 12);  // 13 val files, the bomb left out
    EXPECT_EQ(s.test.bad_files, 1);
    std::ifstream metrics(s.metrics_path);
    std::string line, last_step, last_eval;
    while (std::getline(metrics, line))
      (line.find("\"train_loss\"") != std::string::npos ? last_step : last_eval) = line;
    EXPECT_NE(last_step.find("\"bad_files\":1"), std::string::npos) << last_step;
    EXPECT_NE(last_eval.find("\"test_bad_files\":1"), std::string::npos) << last_eval;  // the bomb in val/
    cfg.data.max_bad_files = 0;
    cfg.train.output = (dir / ("strict_" + kind)).string();
    try {
      run_losses(cfg, &s);
      ADD_FAILURE() << "a bad file with data.max_bad_files = 0 did not stop the run";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("bad.jpg"), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(ImageFolderTraining, EveryTable2ConfigTrainsEvaluatesAndResumes) {
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_imagefolder_all_" + std::to_string(::getpid()));
  write_tree(dir / "data");
  int seen = 0;
  for (const auto& e : fs::directory_iterator(kConfigs)) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    ++seen;
    const engine::TrainSummary full =
        expect_exact_resume([&](const std::string& out) { return shrunk(dir / "data", out, e.path()); },
                            (dir / e.path().stem()).string(), 4);
    EXPECT_EQ(full.steps, 6);
    EXPECT_EQ(full.test.count, 12);
    EXPECT_TRUE(full.test_ema.has_value());
  }
  EXPECT_EQ(seen, 27);  // every configs/imagenet YAML: paper_table2.tsv's 24 rows and paper_table3.tsv's 3
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
