// Swapping the attention kind at evaluation (the paper's Appendix C): weights saved by one kind load into another
// through engine::load_weights_compatible, the path `vitrain eval --set model.attention.type=...` takes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "test_util.h"
#include "autograd/node.h"
#include "engine/trainer.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "models/registry.h"
#include "models/vit.h"
#include "ops/ops.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

models::ViTConfig micro(const std::string& type, bool dwc = false, bool gate = false) {
  models::ViTConfig c = models::preset("vit_micro");  // 4×4 patches: N = 17
  c.embed_dim = 12, c.depth = 2, c.num_heads = 3;
  c.attention.type = type;
  c.attention.m = 4, c.attention.k = 4;
  c.attention.dwc = dwc, c.attention.gate = gate;
  c.attention.agent_num = 4;
  return c;
}

// Saves `from` to safetensors, reads the file back and loads it into `to` (as evaluate_weights does).
engine::WeightLoadReport save_and_load(const models::VisionTransformer& from, models::VisionTransformer& to) {
  TempDir dir;
  const std::string path = dir.file("w.safetensors");
  io::save_safetensors(path, from.state_dict(), {{"attention", from.config().attention.type}});
  return engine::load_weights_compatible(to, io::load_safetensors(path));
}

Tensor param(const nn::Module& m, const std::string& name) {
  for (const auto& [n, t] : m.state_dict())
    if (n == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  return Tensor::zeros({1});
}

void expect_forward_ok(const models::VisionTransformer& m) {
  Tensor x = Tensor::zeros({2, 1, 28, 28});
  ops::normal_(x, 0, 1);
  NoGradGuard g;
  std::vector<double> logits = m.forward(x).to_vector();
  ASSERT_EQ(logits.size(), 20u);
  for (double v : logits) ASSERT_TRUE(std::isfinite(v));
}

TEST(AttentionSwap, MitaDwcWeightsLoadIntoDenseIgnoringTheConv) {
  models::VisionTransformer mita(micro("mita", true)), dense(micro("dense"));
  const auto report = save_and_load(mita, dense);
  EXPECT_TRUE(report.adapted.empty());
  ASSERT_EQ(report.ignored.size(), 4u);  // dwc weight + bias in each of the 2 blocks
  for (const auto& name : report.ignored) EXPECT_NE(name.find(".attn.dwc."), std::string::npos) << name;
  for (const char* name : {"blocks.0.attn.qkv.weight", "blocks.1.attn.qkv.bias", "blocks.1.attn.proj.weight",
                           "blocks.0.mlp.fc1.weight", "pos_embed", "head.bias"})
    EXPECT_EQ(param(dense, name).to_vector(), param(mita, name).to_vector()) << name;
  expect_forward_ok(dense);
}

TEST(AttentionSwap, GateWeightsGiveQkvTheirFirstThreeChunks) {
  models::VisionTransformer gated(micro("mita", true, true)), dense(micro("dense"));
  const auto report = save_and_load(gated, dense);
  EXPECT_EQ(report.adapted.size(), 4u);  // qkv weight + bias per block
  EXPECT_EQ(report.ignored.size(), 4u);  // the dwc tensors
  const int64_t C = 12;
  for (const char* b : {"blocks.0.attn.", "blocks.1.attn."}) {
    Tensor qkvg_w = param(gated, std::string(b) + "qkvg.weight"), qkvg_b = param(gated, std::string(b) + "qkvg.bias");
    ASSERT_EQ(qkvg_w.shape(), (Shape{4 * C, C}));
    EXPECT_EQ(param(dense, std::string(b) + "qkv.weight").to_vector(), qkvg_w.slice(0, 0, 3 * C).to_vector());
    EXPECT_EQ(param(dense, std::string(b) + "qkv.bias").to_vector(), qkvg_b.slice(0, 0, 3 * C).to_vector());
    EXPECT_EQ(param(dense, std::string(b) + "proj.weight").to_vector(),
              param(gated, std::string(b) + "proj.weight").to_vector());
  }
  expect_forward_ok(dense);
}

TEST(AttentionSwap, DenseWeightsLoadIntoMitaAgentAndOtherBudgets) {
  models::VisionTransformer dense(micro("dense"));
  for (auto cfg : {micro("mita"), micro("mita_route"), micro("agent")}) {
    cfg.attention.m = 9;  // another budget than training, as --set model.attention.m=9
    models::VisionTransformer other(cfg);
    const auto report = save_and_load(dense, other);
    EXPECT_TRUE(report.ignored.empty() && report.adapted.empty()) << cfg.attention.type;
    EXPECT_EQ(param(other, "blocks.1.attn.qkv.weight").to_vector(),
              param(dense, "blocks.1.attn.qkv.weight").to_vector());
    expect_forward_ok(other);
  }
  // And back: agent-bias weights into dense drop the biases.
  models::VisionTransformer agent_bias(micro("agent_bias"));
  const auto report = save_and_load(agent_bias, dense);
  EXPECT_EQ(report.ignored.size(), 16u);  // 8 bias tensors × 2 blocks
}

TEST(AttentionSwap, MissingOrMisshapedTensorsAreErrorsNamingThem) {
  models::VisionTransformer dense(micro("dense"));
  models::VisionTransformer gated(micro("mita", true, true));
  expect_error([&] { save_and_load(dense, gated); }, "'blocks.0.attn.qkvg.weight'");
  models::VisionTransformer dwc(micro("mita", true));
  expect_error([&] { save_and_load(dense, dwc); }, "'blocks.0.attn.dwc.weight'");
  models::VisionTransformer agent_bias(micro("agent_bias"));
  expect_error([&] { save_and_load(dense, agent_bias); }, "'blocks.0.attn.an_bias'");
  auto wide = micro("dense");
  wide.embed_dim = 15;
  models::VisionTransformer wider(wide);
  expect_error([&] { save_and_load(dense, wider); }, "cls_token");
}

TEST(AttentionSwap, EvaluateWeightsWithAnotherKind) {
  io::Config cfg = io::load_config(vt::test::fmnist_base_path());
  if (!std::filesystem::exists(cfg.data.data_dir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  for (const char* s :
       {"model.embed_dim=12", "model.depth=2", "model.num_heads=3", "model.attention.type=mita", "model.attention.m=4",
        "model.attention.k=4", "model.attention.dwc=true", "data.test_limit=40", "train.threads=1"})
    io::apply_override(cfg, s);
  cfg.validate();
  TempDir dir;
  const std::string path = dir.file("mita.safetensors");
  io::save_safetensors(path, models::VisionTransformer(engine::vit_config(cfg)).state_dict());
  // vitrain eval --non-strict --set model.attention.type=dense (the dwc flag is ignored by dense; the DWC tensors
  // are skipped), and --set model.attention.m=9.
  engine::EvalOptions non_strict;
  non_strict.load.strict = false;
  for (auto sets :
       {std::vector<std::string>{"model.attention.type=dense"}, std::vector<std::string>{"model.attention.m=9"}}) {
    io::Config c = cfg;
    for (const auto& s : sets) io::apply_override(c, s);
    c.validate();
    engine::EvalResult r = engine::evaluate_weights(c, path, non_strict);
    EXPECT_EQ(r.count, 40);
    EXPECT_TRUE(std::isfinite(r.loss));
  }
}

}  // namespace
}  // namespace vt::test
