// The recipe arithmetic: cosine schedules (per update, per epoch, DeiT's lag) against hand-computed values, the LR
// scaling rule, EMA math, and every config in configs/ (parses, builds its model, ImageNet keys refused).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numbers>

#include "test_util.h"
#include "engine/ema.h"
#include "engine/recipe.h"
#include "engine/trainer.h"
#include "models/registry.h"
#include "nn/layers.h"
#include "optim/lr_schedule.h"
#include "optim/schedule_cosine.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;
constexpr double kPi = std::numbers::pi;

TEST(CosineSchedule, PerUpdateWithWarmupPrefixIsExactlyLrSchedule) {
  const optim::LrSchedule ref(2e-3, 1e-5, 1e-5, 7, 50);
  const optim::CosineSchedule s{2e-3, 1e-5, 1e-5, 7, 50, true};
  for (int64_t t = 0; t < 60; ++t) EXPECT_EQ(s.at(static_cast<double>(t)), ref.lr_at(t)) << t;
}

TEST(CosineSchedule, DeitPerEpochWithoutPrefixAndWithTheOneEpochLag) {
  const optim::CosineSchedule s{1e-3, 1e-6, 1e-5, 5, 300, false};
  EXPECT_DOUBLE_EQ(s.at(0), 1e-6);
  EXPECT_DOUBLE_EQ(s.at(1), 1e-6 + (1e-3 - 1e-6) / 5);
  EXPECT_DOUBLE_EQ(s.at(5), 1e-5 + 0.5 * (1e-3 - 1e-5) * (1 + std::cos(kPi * 5 / 300)));  // not shifted
  EXPECT_DOUBLE_EQ(s.at(150), 1e-5 + 0.5 * (1e-3 - 1e-5));
  EXPECT_DOUBLE_EQ(s.at(300), 1e-5);
  // DeiT: epochs 0 and 1 both run at lr(0); epoch e >= 1 at lr(e - 1).
  EXPECT_DOUBLE_EQ(optim::epoch_lr(s, 0, true), 1e-6);
  EXPECT_DOUBLE_EQ(optim::epoch_lr(s, 1, true), 1e-6);
  EXPECT_DOUBLE_EQ(optim::epoch_lr(s, 2, true), s.at(1));
  EXPECT_DOUBLE_EQ(optim::epoch_lr(s, 299, true), s.at(298));
  EXPECT_DOUBLE_EQ(optim::epoch_lr(s, 2, false), s.at(2));
  const optim::CosineSchedule prefixed{1e-3, 1e-6, 1e-5, 5, 300, true};
  EXPECT_DOUBLE_EQ(prefixed.at(5), 1e-3);
  EXPECT_DOUBLE_EQ(prefixed.at(5 + 295.0 / 2), 1e-5 + 0.5 * (1e-3 - 1e-5));
  expect_error([&] { (void)s.at(-1); }, "negative");
}

TEST(Recipe, LrScalingRuleAndPlan) {
  io::Config c = io::load_config(vt::test::fmnist_base_path());
  c.train.batch_size = 256;
  c.train.grad_accum_steps = 4;
  EXPECT_EQ(engine::global_batch(c), 1024);
  EXPECT_EQ(engine::resolved_lr(c), c.optim.lr);  // optim.lr > 0: as is
  c.optim.lr = 0;
  c.optim.lr_base = 5e-4;
  EXPECT_DOUBLE_EQ(engine::resolved_lr(c), 1e-3);  // DeiT: 5e-4 · 1024 / 512
  c.optim.lr_base_scale = "sqrt";
  EXPECT_DOUBLE_EQ(engine::resolved_lr(c), 5e-4 * std::sqrt(2.0));
  c.optim.lr_base_scale = "linear";
  c.train.epochs = 10;
  c.schedule.warmup_epochs = 2;
  c.schedule.warmup_lr = 0;
  c.schedule.sched_on_updates = false;
  c.schedule.warmup_prefix = false;
  c.schedule.deit_epoch_lag = true;
  const engine::LrPlan plan(c, 100);
  EXPECT_DOUBLE_EQ(plan.lr(0, 0), 0.0);
  EXPECT_DOUBLE_EQ(plan.lr(150, 1), 0.0);   // the lag: epoch 1 still at lr(0)
  EXPECT_DOUBLE_EQ(plan.lr(250, 2), 5e-4);  // lr(1): half the warmup
  c.schedule.sched_on_updates = true;
  c.schedule.deit_epoch_lag = false;
  c.schedule.warmup_prefix = true;
  const engine::LrPlan per_update(c, 100);
  EXPECT_DOUBLE_EQ(per_update.lr(100, 1), 5e-4);  // 100 of 200 warmup updates
  EXPECT_DOUBLE_EQ(per_update.lr(200, 2), 1e-3);
}

TEST(ModelEma, FollowsTheTimmV2Recurrence) {
  Generator g(1);
  nn::Linear model(3, 2, true, g), shadow(3, 2, true, g);
  engine::ModelEma ema(model, shadow, 0.75);
  std::vector<double> e = model.weight.to_vector();
  for (int step = 0; step < 3; ++step) {
    model.weight.fill_(static_cast<double>(step + 1));
    ema.update(model);
    for (auto& v : e) v = v * 0.75 + static_cast<double>(step + 1) * 0.25;
  }
  const auto got = shadow.weight.to_vector();
  for (size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(got[i], e[i], 1e-6);
  EXPECT_FALSE(shadow.training());
}

std::vector<fs::path> all_configs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(VT_SOURCE_DIR) / "configs"))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Configs, EveryConfigParsesAndBuildsItsModel) {
  const auto paths = all_configs();
  ASSERT_GE(paths.size(), 15u);  // 14 Table 2 rows + the demo
  for (const auto& p : paths) {
    if (p.parent_path().filename() == "ade20k") continue;    // Segmenters: tests/unit/test_seg_configs.cpp
    if (p.parent_path().filename() == "lra") continue;       // LRA classifiers: tests/unit/test_sequence_task.cpp
    if (p.parent_path().filename() == "finetune") continue;  // Table 7: tests/unit/test_finetune_configs.cpp
    SCOPED_TRACE(p.string());
    const io::Config c = io::load_config(p.string());
    // Full depth for the dense rows (their parameter counts are checked); one block elsewhere keeps this test
    // fast while still building each attention kind at the config's resolution.
    const bool dense_row = p.stem().string().find("_dense") != std::string::npos;
    models::ViTConfig arch = engine::vit_config(c);
    if (!dense_row) arch.depth = 1;
    models::VisionTransformer model(arch);
    EXPECT_GT(model.num_parameters(), 0);
    if (p.parent_path().filename() != "imagenet") continue;
    if (p.stem().string().rfind("vit5_", 0) == 0) {
      // Table 3: the MiTA-ViT-5 README's global batch 2048 and unscaled lr 4e-3, 800 epochs, drop path 0.05.
      for (const int world : {1, 8}) {
        const io::Config r = engine::resolve_for_world(c, world);
        EXPECT_EQ(engine::global_batch(r, world), 2048);
        EXPECT_DOUBLE_EQ(engine::resolved_lr(r, world), 4e-3);
      }
      EXPECT_EQ(c.train.epochs, 800);
      EXPECT_EQ(c.model.drop_path_rate, 0.05);
      EXPECT_TRUE(arch.vit5);
      EXPECT_NO_THROW(engine::check_supported(c));
      continue;
    }
    // The Table 2 recipe: global batch 1024 and lr 1e-3 on one GPU and under `vitrain launch -n 8` alike.
    for (const int world : {1, 8}) {
      const io::Config r = engine::resolve_for_world(c, world);
      EXPECT_EQ(r.train.batch_size, 1024 / world);
      EXPECT_EQ(engine::global_batch(r, world), 1024);
      EXPECT_DOUBLE_EQ(engine::resolved_lr(r, world), 1e-3);
    }
    EXPECT_EQ(c.train.epochs, 300);
    EXPECT_TRUE(c.train.model_ema);
    EXPECT_EQ(c.model.drop_path_rate, 0.1);
    const std::string stem = p.stem().string();
    if (stem == "deit_tiny_dense") {
      EXPECT_EQ(model.num_parameters(), 5717416);
    } else if (stem == "deit_small_dense") {
      EXPECT_EQ(model.num_parameters(), 22050664);
    }
    // The ImageNet loader honours the whole recipe; on Fashion-MNIST the trainer refuses it rather than ignoring it.
    EXPECT_NO_THROW(engine::check_supported(c));
    io::Config fashion = c;
    fashion.data.dataset = "fashion_mnist";
    expect_error([&] { engine::check_supported(fashion); }, "data.mixup");
  }
}

}  // namespace
}  // namespace vt::test

namespace vt::test {
namespace {

// The model must take the dataset's images and labels: one error naming the key (and, when the value came from
// the preset, saying so) before any model or loader is built.
TEST(Recipe, ModelChannelsAndClassesMustFitTheDataset) {
  auto cfg = [](std::vector<std::string> sets) {
    io::Config c = io::load_config(vt::test::fmnist_base_path());
    for (const auto& s : sets) io::apply_override(c, s);
    c.validate();
    return c;
  };
  const io::Config micro = cfg({});  // vit_micro on fashion_mnist: 1 channel, 10 classes
  EXPECT_NO_THROW(engine::check_supported(micro));
  expect_error([&] { engine::check_supported(cfg({"model.in_chans=3"})); },
               "model.in_chans is 3 but data.dataset fashion_mnist has 1-channel images");
  expect_error([&] { engine::check_supported(cfg({"model.name=deit_tiny_patch16_224"})); },
               "model.in_chans is 3 (from the preset deit_tiny_patch16_224)");
  expect_error([&] { engine::check_supported(cfg({"model.num_classes=5"})); },
               "model.num_classes is 5 but data.dataset fashion_mnist has 10 classes");
  EXPECT_NO_THROW(engine::check_supported(cfg({"model.num_classes=12"})));  // unused logits are harmless
  expect_error([&] { engine::check_supported(cfg({"data.mean=[0.5,0.5,0.5]"})); }, "data.mean/std with fashion_mnist");
  expect_error(
      [&] {
        engine::check_supported(cfg({"data.dataset=imagefolder", "model.num_classes=3"}));
      },
      "model.in_chans is 1 (from the preset vit_micro) but data.dataset imagefolder has 3-channel images");
  EXPECT_NO_THROW(
      engine::check_supported(cfg({"data.dataset=imagefolder", "model.in_chans=3", "model.num_classes=3"})));
  const std::vector<std::string> seg = {"data.dataset=ade20k",       "model.name=vit_tiny_patch16_384",
                                        "model.decoder.type=linear", "eval.best_metric=miou",
                                        "optim.smoothing=0",         "train.model_ema=false"};
  EXPECT_NO_THROW(engine::check_supported(cfg(seg)));
  std::vector<std::string> seg100 = seg;
  seg100.push_back("model.num_classes=100");
  expect_error([&] { engine::check_supported(cfg(seg100)); },
               "model.num_classes is 100 but data.dataset ade20k has 150 classes");
}

}  // namespace
}  // namespace vt::test

namespace vt::test {
namespace {

// Keys each within their bounds can still multiply to a model no machine holds: one error naming the keys, not
// a bad_alloc while the weights are allocated.
TEST(Recipe, ModelsTooLargeToBuildAreAnErrorNamingTheKeys) {
  io::ModelConfig m;
  m.name = "deit_base_patch16_224";
  EXPECT_NO_THROW(models::vit_config(m, 0));
  m.embed_dim = 65536;
  m.num_heads = 64;
  m.mlp_ratio = 64;
  m.validate();  // every key alone is allowed
  expect_error([&] { models::vit_config(m, 0); }, "model.embed_dim 65536, model.depth 12, model.mlp_ratio 64");
  io::ModelConfig big_image;
  big_image.name = "vit_micro";  // patch 7
  big_image.img_size = 16380;
  big_image.validate();
  expect_error([&] { models::vit_config(big_image, 0); }, "model.img_size 16380 / model.patch_size 7 gives");
}

}  // namespace
}  // namespace vt::test
