// Weights from other codebases into our models: timm/DeiT state dicts (bare, DeiT's training wrapper, DDP's
// "module."), distilled DeiT, the official MiTA-DeiT attention modules and the official MiTA-Segmenter checkpoint,
// all as torch.save files made by scripts/gen_weights_fixtures.py; strict loading by default.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/weight_layouts.h"
#include "engine/weights_file.h"
#include "engine/weights_load.h"
#include "io/torch_checkpoint.h"
#include "models/registry.h"
#include "nn/module.h"
#include "ops/ops.h"

namespace vt {
namespace {

std::string fixture(const std::string& name) { return std::string(VT_SOURCE_DIR) + "/tests/ref/" + name; }

// The fixtures' tiny ViT: Fashion-MNIST sized (1 x 28 x 28, patch 7), dim 16, depth 1, one head, 10 classes.
io::ModelConfig tiny(const std::string& name = "vit_micro") {
  io::ModelConfig m;
  m.name = name;
  m.img_size = 28, m.patch_size = 7, m.in_chans = 1, m.num_classes = 10;
  m.embed_dim = 16, m.depth = 1, m.num_heads = 1;
  return m;
}

io::ModelConfig tiny_kind(const std::string& kind) {
  io::ModelConfig m = tiny();
  auto& a = m.attention;
  a.m = 4, a.k = 4;
  if (kind == "mita" || kind == "mita_dwc" || kind == "mita_gate") a.type = "mita";
  if (kind == "mita_dwc" || kind == "mita_gate") a.dwc = true;
  if (kind == "mita_gate") a.gate = true;
  if (kind == "mita_route") a.type = "mita_route", a.k = 0;
  if (kind == "agent") a.type = "agent", a.agent_num = 4;
  if (kind == "agent_bias") a.type = "agent_bias", a.agent_num = 49, m.patch_size = 2;  // official: 14x14 grid
  if (kind == "linear") a.type = "linear", m.num_heads = 2;
  return m;
}

Tensor named(const io::NamedTensors& w, const std::string& name) {
  for (const auto& [n, t] : w)
    if (n == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  return {};
}

Tensor state(const nn::Module& m, const std::string& name) { return named(m.state_dict(), name); }

void expect_same(const Tensor& a, const Tensor& b, double tol = 0) {
  ASSERT_EQ(a.shape(), b.shape());
  const Tensor x = a.contiguous().to(DType::f32), y = b.contiguous().to(DType::f32);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_NEAR(x.data<float>()[i], y.data<float>()[i], tol) << "element " << i;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(WeightsFiles, TimmDeitStateDictLoadsStrictlyAndMatchesTorchsLogits) {
  models::VisionTransformer model(models::vit_config(tiny(), 0));
  engine::load_vit_weights(model, fixture("weights_deit.pth"), {});
  const io::NamedTensors file = io::read_torch_checkpoint(fixture("weights_deit.pth")).tensors;
  expect_same(state(model, "blocks.0.attn.qkv.weight"), named(file, "blocks.0.attn.qkv.weight"));
  const io::NamedTensors expected = io::read_torch_checkpoint(fixture("weights_expected.pth")).tensors;
  model.eval();
  expect_same(model.forward(named(expected, "input")), named(expected, "deit.logits"), 2e-5);
}

TEST(WeightsFiles, DistilledDeitAveragesItsTwoHeadsAsTimm) {
  models::VisionTransformer model(models::vit_config(tiny("deit_tiny_distilled_patch16_224"), 0));
  ASSERT_TRUE(model.config().distilled);
  engine::load_vit_weights(model, fixture("weights_deit_distilled.pth"), {});
  const io::NamedTensors expected = io::read_torch_checkpoint(fixture("weights_expected.pth")).tensors;
  model.eval();
  const Tensor logits = model.forward(named(expected, "input"));
  expect_same(logits, named(expected, "distilled.logits"), 2e-5);
  // The two heads differ, so the average is a real test of (head(x_cls) + head_dist(x_dist)) / 2.
  const Tensor cls = named(expected, "distilled.head_cls"), dist = named(expected, "distilled.head_dist");
  EXPECT_GT(std::abs(cls.data<float>()[0] - dist.data<float>()[0]), 1e-2);
  expect_same(logits, (cls + dist) * 0.5, 2e-5);
}

TEST(WeightsFiles, DeitWrapperGivesModelOrEmaAndDdpPrefixIsStripped) {
  const engine::WeightsFile raw = engine::load_weights_file(fixture("weights_deit_wrapper.pth"));
  EXPECT_EQ(raw.source, "model");
  const engine::WeightsFile ema =
      engine::load_weights_file(fixture("weights_deit_wrapper.pth"), engine::WeightsPick::ema);
  EXPECT_EQ(ema.source, "model_ema");
  expect_same(named(ema.tensors, "head.weight"), named(raw.tensors, "head.weight") * 0.5, 1e-7);
  models::VisionTransformer model(models::vit_config(tiny(), 0));
  engine::load_vit_weights(model, fixture("weights_deit_wrapper.pth"), {engine::WeightsPick::ema, true});
  expect_same(state(model, "head.weight"), named(ema.tensors, "head.weight"));
  engine::load_vit_weights(model, fixture("weights_deit_ddp.pth"), {});
  expect_same(state(model, "head.weight"), named(raw.tensors, "head.weight"));
}

class OfficialMita : public ::testing::TestWithParam<std::string> {};

TEST_P(OfficialMita, OfficialModuleWeightsLoadStrictly) {
  const std::string path = fixture("weights_mita_" + GetParam() + ".pth");
  models::VisionTransformer model(models::vit_config(tiny_kind(GetParam()), 0));
  engine::load_vit_weights(model, path, {});  // strict: throws on any missing or unexpected tensor
  io::NamedTensors file = io::read_torch_checkpoint(path).tensors;
  engine::from_official_layout(file);
  for (const auto& [name, t] : model.state_dict()) expect_same(t, named(file, name));
}

INSTANTIATE_TEST_SUITE_P(Kinds, OfficialMita,
                         ::testing::Values("mita", "mita_dwc", "mita_gate", "mita_route", "agent", "agent_bias",
                                           "linear"));

TEST(WeightsFiles, OfficialLayoutRoundTripsLinearAttentionNames) {
  io::NamedTensors file = io::read_torch_checkpoint(fixture("weights_mita_linear.pth")).tensors;
  const io::NamedTensors original = file;
  engine::from_official_layout(file);
  named(file, "blocks.0.attn.qkv.weight");
  named(file, "blocks.0.attn.proj.bias");
  engine::to_official_layout(file);
  ASSERT_EQ(file.size(), original.size());
  for (size_t i = 0; i < file.size(); ++i) EXPECT_EQ(file[i].first, original[i].first);
}

TEST(WeightsFiles, StrictLoadingNamesTheFileAndTheTensors) {
  models::VisionTransformer dense(models::vit_config(tiny(), 0));
  const std::string extra =
      error_of([&] { engine::load_vit_weights(dense, fixture("weights_mita_mita_dwc.pth"), {}); });
  EXPECT_NE(extra.find("weights_mita_mita_dwc.pth"), std::string::npos) << extra;
  EXPECT_NE(extra.find("2 unexpected tensor(s): blocks.0.attn.dwc.weight, blocks.0.attn.dwc.bias"), std::string::npos)
      << extra;
  models::VisionTransformer dwc(models::vit_config(tiny_kind("mita_dwc"), 0));
  const std::string missing = error_of([&] { engine::load_vit_weights(dwc, fixture("weights_deit.pth"), {}); });
  EXPECT_NE(missing.find("2 missing tensor(s): blocks.0.attn.dwc.weight, blocks.0.attn.dwc.bias"), std::string::npos)
      << missing;
  // Another class count is a shape mismatch under strict loading, named.
  io::ModelConfig five = tiny();
  five.num_classes = 5;
  models::VisionTransformer small_head(models::vit_config(five, 0));
  const std::string shape = error_of([&] { engine::load_vit_weights(small_head, fixture("weights_deit.pth"), {}); });
  EXPECT_NE(shape.find("head"), std::string::npos) << shape;
  // Non-strict: the same loads go through, the model keeping its own DWC.
  const Tensor own = state(dwc, "blocks.0.attn.dwc.weight").clone();
  engine::load_vit_weights(dwc, fixture("weights_deit.pth"), {engine::WeightsPick::weights, false});
  expect_same(state(dwc, "blocks.0.attn.dwc.weight"), own);
  engine::load_vit_weights(dense, fixture("weights_mita_mita_dwc.pth"), {engine::WeightsPick::weights, false});
}

TEST(WeightsFiles, OfficialSegmenterCheckpointLoadsStrictly) {
  io::ModelConfig m = tiny();
  m.img_size = 32, m.patch_size = 8, m.in_chans = 3, m.num_classes = 3;
  m.decoder.type = "cbt", m.decoder.layers = 2, m.decoder.heads = 2, m.decoder.head_dim = 4, m.decoder.reps_grid = 2;
  models::Segmenter seg(models::segmenter_config(m, 0));
  engine::load_segmenter_file(seg, fixture("weights_segmenter.pth"), {});
  const io::NamedTensors file = io::read_torch_checkpoint(fixture("weights_segmenter.pth")).tensors;
  expect_same(state(seg, "decoder.net.layers.1.fn.to_out.weight"),
              named(file, "decoder.net.layers.1.fn.to_out.weight"));
  expect_same(state(seg, "encoder.blocks.0.attn.qkv.bias"), named(file, "encoder.blocks.0.attn.qkv.bias"));
}

TEST(WeightsFiles, EmaOfAPlainFileIsAnErrorNamingIt) {
  const std::string e =
      error_of([] { engine::load_weights_file(fixture("vit_ref.safetensors"), engine::WeightsPick::ema); });
  EXPECT_NE(e.find("vit_ref.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("--ema"), std::string::npos) << e;
}

}  // namespace
}  // namespace vt
