// configs/ade20k: every Table 4 config (and the linear-decoder baseline) loads, validates, carries spec §5's
// recipe, builds its Segmenter (one block, to stay fast) and passes the trainer's check_supported; the poly plan
// gives Segmenter's per-iteration rates; the segmentation trainer refuses classification-only keys; and
// model.initial_checkpoint is honoured by the classification trainer too (timm weights, another resolution).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "io_temp_dir.h"
#include "test_util.h"
#include "training_runs.h"
#include "engine/recipe.h"
#include "engine/timm_weights.h"
#include "io/safetensors.h"
#include "models/segmenter.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> ade20k_configs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(VT_SOURCE_DIR) / "configs" / "ade20k"))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SegConfigs, EveryAde20kConfigLoadsWithTheTable4Recipe) {
  const auto paths = ade20k_configs();
  ASSERT_EQ(paths.size(), 9u);  // T/S/B/L × dense/MiTA + ViT-S linear
  for (const auto& p : paths) {
    SCOPED_TRACE(p.string());
    const io::Config c = io::load_config(p.string());
    const std::string stem = p.stem().string();
    const bool large = stem.rfind("vit_large", 0) == 0;
    EXPECT_EQ(c.data.dataset, "ade20k");
    EXPECT_EQ(c.model.img_size, large ? 640 : 512);
    EXPECT_EQ(c.eval.seg_short_side, large ? 640 : 512);
    EXPECT_EQ(c.model.num_classes, 150);
    EXPECT_EQ(c.model.layer_norm_eps, 1e-5);
    EXPECT_EQ(c.model.drop_path_rate, 0.1);
    EXPECT_EQ(c.model.decoder.type, stem.find("linear") != std::string::npos ? "linear" : "cbt");
    EXPECT_EQ(c.model.attention.type, stem.find("mita") != std::string::npos ? "mita" : "dense");
    if (c.model.attention.type == "mita") {
      EXPECT_EQ(c.model.attention.m, 49);
      EXPECT_EQ(c.model.attention.k, 49);
    }
    EXPECT_EQ(c.data.mean, (std::vector<double>{0.5, 0.5, 0.5}));
    EXPECT_EQ(c.data.std, (std::vector<double>{0.5, 0.5, 0.5}));
    EXPECT_EQ(c.optim.opt, "sgd");  // timm: Nesterov
    EXPECT_EQ(c.optim.momentum, 0.9);
    EXPECT_EQ(c.optim.weight_decay, 0.0);
    EXPECT_EQ(engine::global_batch(c), 8);
    EXPECT_EQ(c.train.epochs, 64);
    EXPECT_FALSE(c.train.amp);
    EXPECT_EQ(c.eval.interval, 2);
    EXPECT_EQ(c.eval.best_metric, "miou");
    EXPECT_NO_THROW(engine::check_supported(c));
    // Poly per iteration from 1e-3 to 1e-5, no warmup (2527 updates per epoch on the full training split).
    const engine::LrPlan plan(c, 2527);
    const double T = 2527.0 * 64;
    EXPECT_DOUBLE_EQ(plan.lr(0, 0), 1e-3);
    EXPECT_NEAR(plan.lr(1000, 0), (1e-3 - 1e-5) * std::pow(1 - 1000 / T, 0.9) + 1e-5, 1e-15);
    EXPECT_DOUBLE_EQ(plan.lr(2527 * 64, 64), 1e-5);

    models::SegmenterConfig arch = models::segmenter_config(c.model, 0);
    EXPECT_EQ(arch.num_classes, 150);
    EXPECT_EQ(arch.backbone.img_size, large ? 640 : 512);
    arch.backbone.depth = 1;
    models::Segmenter seg(arch);
    EXPECT_GT(seg.num_parameters(), 0);
  }
}

TEST(SegConfigs, SegmentationTrainerRefusesClassificationOnlyKeys) {
  io::Config c = io::load_config((fs::path(VT_SOURCE_DIR) / "configs/ade20k/vit_tiny_mita.yaml").string());
  io::Config mix = c;
  mix.data.mixup = 0.8;
  mix.data.aa = "rand-m9-mstd0.5-inc1";
  expect_error([&] { engine::check_supported(mix); }, "data.mixup/cutmix, data.aa");
  io::Config smooth = c;
  smooth.optim.smoothing = 0.1;
  expect_error([&] { engine::check_supported(smooth); }, "optim.smoothing");
  // The EMA, gradient accumulation and the CUDA graph are the training loop's, for every task.
  io::Config loop_features = c;
  loop_features.train.model_ema = true;
  loop_features.train.grad_accum_steps = 2;
  loop_features.train.cuda_graph = true;
  EXPECT_NO_THROW(engine::check_supported(loop_features));
}

TEST(InitialCheckpoint, ClassificationTrainingStartsFromTimmWeights) {
  if (!fs::exists(vt::test::fmnist_dir())) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config c = tiny_training_config(dir.file("run"));
  c.train.model_ema = false;
  c.train.epochs = 1;
  c.optim.lr = 1e-30;  // the weights stay where they started (to f32 precision)
  c.schedule.warmup_epochs = 0;
  c.schedule.min_lr = 0;
  // timm-format weights of the same architecture at 21² (3×3 patches of 7): pos_embed is resampled to 7×7.
  models::ViTConfig arch = engine::vit_config(c);
  arch.img_size = 21;
  arch.seed = 99;
  const models::VisionTransformer start(arch);
  io::save_safetensors(dir.file("timm.safetensors"), engine::export_timm_weights(start));
  c.model.initial_checkpoint = dir.file("timm.safetensors");
  engine::train(c);
  const io::NamedTensors trained = io::load_safetensors(dir.file("run/model.safetensors"));
  const io::NamedTensors given = io::load_safetensors(dir.file("timm.safetensors"));
  int compared = 0;
  for (const auto& [name, t] : trained)
    for (const auto& [gname, g] : given)
      if (gname == name && name != "pos_embed") {
        const std::vector<double> a = t.to_vector(), b = g.to_vector();
        ASSERT_EQ(a.size(), b.size()) << name;
        for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6) << name << "[" << i << "]";
        ++compared;
      }
  EXPECT_EQ(compared, static_cast<int>(trained.size()) - 1);
}

}  // namespace
}  // namespace vt::test
