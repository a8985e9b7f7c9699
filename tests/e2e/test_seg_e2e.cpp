// Segmentation end to end on a generated mini-ADE20K, on the CPU: a tiny Segmenter (configs/ade20k/vit_tiny_*.yaml
// shrunk: 32² crops, patch 8 → 4×4 patches, 2 blocks of width 48, CBT with 2 heads × 8 dims and 2×2
// representatives) starts from timm-format backbone weights at another resolution (pos_embed resampled, head
// skipped), trains a few SGD-Nesterov + poly updates, evaluates the validation split with the sliding window,
// writes its checkpoints; `vitrain seg-eval` prints mIoU and `vitrain viz seg` writes a PNG; the MiTA variant
// trains too; a run stopped by train.max_steps and resumed matches the uninterrupted one bit for bit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/run_vitrain.h"
#include "data/mini_ade20k.h"
#include "engine/seg_trainer.h"
#include "engine/timm_weights.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "models/segmenter.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct SegE2E : ::testing::Test {
  fs::path dir, data;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("vt_e2e_seg_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    data = write_mini_ade20k((dir / "data").string());
  }
  void TearDown() override { fs::remove_all(dir); }

  // A Table 4 config shrunk to the mini dataset.
  io::Config shrunk(const std::string& config, const std::string& out, std::vector<std::string> extra = {}) const {
    std::vector<std::string> sets = {
        "model.img_size=32", "model.patch_size=8", "model.embed_dim=48", "model.depth=2", "model.num_heads=3",
        "model.initial_checkpoint=\"\"", "model.decoder.heads=2", "model.decoder.head_dim=8",
        "model.decoder.reps_grid=2", "model.attention.m=4", "model.attention.k=4", "data.data_dir=" + data.string(),
        "data.workers=2", "optim.lr=0.05", "train.epochs=3", "train.batch_size=4", "train.threads=2",
        "train.device=cpu", "train.log_interval=1", "train.output=" + out, "eval.batch_size=4",
        "eval.seg_short_side=32", "eval.seg_long_side=128", "eval.seg_stride=16"};
    sets.insert(sets.end(), extra.begin(), extra.end());
    return io::load_config((fs::path(VT_SOURCE_DIR) / "configs" / "ade20k" / config).string(), sets);
  }
};

TEST_F(SegE2E, TrainsFromTimmWeightsEvaluatesAndDraws) {
  const fs::path out = dir / "dense";
  io::Config cfg = shrunk("vit_tiny_dense.yaml", out.string());
  // timm-format backbone weights at 24² (3×3 patches) with a 10-class head: pos_embed resampled to 4×4, head skipped.
  models::ViTConfig timm_arch = models::segmenter_config(cfg.model, 7).backbone;
  timm_arch.img_size = 24;
  timm_arch.num_classes = 10;
  const fs::path timm_path = dir / "vit_timm.safetensors";
  io::save_safetensors(timm_path.string(), engine::export_timm_weights(models::VisionTransformer(timm_arch)));
  cfg.model.initial_checkpoint = timm_path.string();

  std::vector<double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t, double loss) { losses.push_back(loss); };
  const engine::SegTrainSummary s = engine::train_segmentation(cfg, hooks);
  ASSERT_EQ(losses.size(), 6u);  // 8 training images / batch 4 × 3 epochs
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(*std::min_element(losses.begin() + 1, losses.end()), losses.front());
  EXPECT_EQ(s.steps, 6);
  EXPECT_EQ(s.test.images, 3);
  EXPECT_TRUE(std::isfinite(s.test.scores.miou));
  EXPECT_GE(s.best_epoch, 2);  // evaluated after epochs 2 and 3
  for (const char* f : {"last.safetensors", "best.safetensors", "model.safetensors", "train.log", "config.yaml"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const std::string log = read_file(out / "train.log");
  EXPECT_NE(log.find("backbone " + timm_path.string()), std::string::npos) << log;
  const std::string metrics = read_file(out / "metrics.jsonl");
  EXPECT_NE(metrics.find("\"miou\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"train_loss\""), std::string::npos) << metrics;

  // The CLI: seg-eval on the validation split, then the picture of one validation image.
  const fs::path yaml = out / "config.yaml";  // the run's resolved config
  const CliRun eval = run_vitrain("seg-eval -c '" + yaml.string() + "' -w '" + (out / "model.safetensors").string() +
                                  "' --device cpu");
  EXPECT_EQ(eval.code, 0) << eval.output;
  EXPECT_NE(eval.output.find("mIoU"), std::string::npos) << eval.output;
  const fs::path png = dir / "viz.png";
  const fs::path image = data / "images" / "validation" / "ADE_val_00000001.jpg";
  const fs::path label = data / "annotations" / "validation" / "ADE_val_00000001.png";
  const CliRun viz = run_vitrain("viz seg -c '" + yaml.string() + "' -w '" + (out / "model.safetensors").string() +
                                 "' --image '" + image.string() + "' --label '" + label.string() + "' -o '" +
                                 png.string() + "'");
  EXPECT_EQ(viz.code, 0) << viz.output;
  ASSERT_TRUE(fs::exists(png)) << viz.output;
  EXPECT_EQ(read_file(png).substr(1, 3), "PNG");

  // `vitrain train` with a decoder config runs this loop too.
  const CliRun train = run_vitrain("train -c '" + yaml.string() + "' --set train.epochs=1 --set train.output='" +
                                   (dir / "cli").string() + "'");
  EXPECT_EQ(train.code, 0) << train.output;
  EXPECT_NE(train.output.find("validation mIoU"), std::string::npos) << train.output;
}

TEST_F(SegE2E, MitaBackboneTrainsAndEvaluates) {
  std::vector<double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t, double loss) { losses.push_back(loss); };
  const engine::SegTrainSummary s =
      engine::train_segmentation(shrunk("vit_tiny_mita.yaml", (dir / "mita").string(), {"train.epochs=1"}), hooks);
  ASSERT_EQ(losses.size(), 2u);
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_EQ(s.test.images, 3);
  EXPECT_TRUE(std::isfinite(s.test.scores.miou));
}

TEST_F(SegE2E, StoppedAndResumedRunMatchesTheUninterruptedOne) {
  auto run = [&](const std::string& out, std::vector<std::string> extra, std::vector<double>& losses) {
    engine::TrainHooks hooks;
    hooks.on_update = [&](int64_t, double loss) { losses.push_back(loss); };
    extra.push_back("train.epochs=2");
    extra.push_back("data.test_limit=1");
    return engine::train_segmentation(shrunk("vit_tiny_dense.yaml", out, extra), hooks);
  };
  std::vector<double> full, first, second;
  run((dir / "full").string(), {}, full);
  const engine::SegTrainSummary stopped = run((dir / "split").string(), {"train.max_steps=3"}, first);
  EXPECT_TRUE(stopped.stopped_at_max_steps);
  run((dir / "split").string(), {"train.resume=auto"}, second);
  ASSERT_EQ(full.size(), 4u);
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(second.size(), 1u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(first[i], full[i]) << i;
  EXPECT_EQ(second[0], full[3]);
  const io::NamedTensors a = io::load_safetensors((dir / "full" / "model.safetensors").string());
  const io::NamedTensors b = io::load_safetensors((dir / "split" / "model.safetensors").string());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.to_vector(), b[i].second.to_vector()) << a[i].first;
  }
}

}  // namespace
}  // namespace vt::test
