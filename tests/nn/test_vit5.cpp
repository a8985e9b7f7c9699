// ViT-5 (ViTConfig::vit5, the vit5_* presets) and its MiTA variants: against the official MiTA-ViT-5 models run by
// scripts/gen_vit5_fixtures.py (same weights → same logits; the dense model's input gradient too), a
// finite-difference gradcheck in f64 of tiny dense and MiTA + DWC models, and the errors of unsupported layouts.
#include <gtest/gtest.h>

#include <map>

#include "autograd/gradcheck.h"
#include "io/torch_checkpoint.h"
#include "models/mita_attention.h"
#include "models/registry.h"
#include "models/rope.h"
#include "models/vit.h"
#include "ops/ops.h"
#include "test_util.h"

namespace vt::test {
namespace {

models::ViTConfig tiny_vit5(const std::string& attention, int64_t img, int64_t patch, int64_t dim, int64_t depth) {
  models::ViTConfig c = models::preset("vit5_small");
  c.img_size = img;
  c.patch_size = patch;
  c.in_chans = 1;
  c.num_classes = 5;
  c.embed_dim = dim;
  c.depth = depth;
  c.num_heads = 2;
  if (attention != "dense") {
    c.attention.type = "mita";
    c.attention.landmark_pool = "patches";
    c.attention.dwc = attention == "mita_dwc";
  }
  return c;
}

// ---- the official models (tests/nn/fixtures/vit5_<kind>.pth) ----

std::map<std::string, Tensor> load_fixture(const std::string& kind) {
  std::map<std::string, Tensor> t;
  const std::string path = std::string(VT_SOURCE_DIR) + "/tests/nn/fixtures/vit5_" + kind + ".pth";
  for (auto& [name, tensor] : io::read_torch_checkpoint(path).tensors) t[name] = tensor;
  return t;
}

bool is_rope_buffer(const std::string& name) {  // rope.py's inverse frequencies; ours are the cos/sin tables
  return name.size() > 6 && name.compare(name.size() - 6, 6, ".freqs") == 0;
}

void expect_official(const std::string& kind, double rel_tol) {
  SCOPED_TRACE(kind);
  const std::map<std::string, Tensor> f = load_fixture(kind);
  models::ViTConfig cfg = tiny_vit5(kind, 48, 8, 16, 2);
  cfg.attention.m = 25;  // the official MiTA-ViT-5 layer: 5x5 pooled landmarks, kv_topk = 25 + 5
  cfg.attention.k = 30;
  models::VisionTransformer model(cfg);
  model.eval();
  // Every official parameter, by name and shape, and nothing else.
  std::map<std::string, Shape> official, ours;
  for (const auto& [name, t] : f)
    if (name.rfind("state.", 0) == 0 && !is_rope_buffer(name)) official[name.substr(6)] = t.shape();
  for (const auto& [name, t] : model.named_parameters()) ours[name] = t.shape();
  ASSERT_EQ(ours, official);
  nn::NamedTensors state = model.state_dict();
  for (auto& [name, t] : state)
    if (official.count(name)) t = f.at("state." + name);
  model.load_state_dict(state);

  Tensor x = f.at("x").detach().set_requires_grad(true);
  const Tensor logits = model.forward(x);
  const std::vector<double> got = logits.to_vector(), want = f.at("logits").to_vector();
  ASSERT_EQ(logits.shape(), f.at("logits").shape());
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0.1);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], rel_tol * scale) << "logit " << i;
  if (!f.count("dx")) return;
  ops::sum(logits * f.at("g")).backward();
  const std::vector<double> dx = x.grad().to_vector(), dx_want = f.at("dx").to_vector();
  double dscale = 0;
  for (double v : dx_want) dscale = std::max(dscale, std::abs(v));
  for (size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(dx[i], dx_want[i], rel_tol * dscale) << "dx " << i;
}

TEST(Vit5Official, DenseLogitsAndInputGradient) { expect_official("dense", 2e-5); }
TEST(Vit5Official, MitaLogits) { expect_official("mita", 2e-5); }
TEST(Vit5Official, MitaDwcLogits) { expect_official("mita_dwc", 2e-5); }

// ---- f64 gradcheck over every parameter and the image ----

std::vector<Tensor*> parameter_slots(models::VisionTransformer& m) {
  std::vector<Tensor*> s = {&m.cls_token, &m.reg_token, &m.pos_embed, &m.patch_embed->proj->weight,
                            &m.patch_embed->proj->bias};
  for (auto& b : m.blocks) {
    s.insert(s.end(), {&b->norm1->weight, &b->norm2->weight, &b->gamma_1, &b->gamma_2, &b->attn->q_norm->weight,
                       &b->attn->k_norm->weight, &b->mlp->fc1->weight, &b->mlp->fc1->bias, &b->mlp->fc2->weight,
                       &b->mlp->fc2->bias});
    if (auto* d = dynamic_cast<models::DenseAttention*>(b->attn.get())) {
      s.insert(s.end(), {&d->qkv->weight, &d->proj->weight, &d->proj->bias});
    } else {
      auto* a = dynamic_cast<models::MitaAttention*>(b->attn.get());
      s.insert(s.end(), {&a->qkv->weight, &a->proj->weight, &a->proj->bias});
      if (a->dwc) s.insert(s.end(), {&a->dwc->weight, &a->dwc->bias});
    }
  }
  s.insert(s.end(), {&m.norm->weight, &m.head->weight, &m.head->bias});
  return s;
}

Tensor randn64(const Shape& shape, uint64_t seed, double std) {
  Tensor t = Tensor::zeros(shape, DType::f64);
  Generator gen(seed);
  ops::normal_(t, 0, std, gen);
  return t;
}

void gradcheck_vit5(const std::string& kind, int64_t depth) {
  models::ViTConfig cfg = tiny_vit5(kind, 16, 4, 8, depth);  // a 4x4 grid, 4 registers: N = 21; d = 4
  cfg.attention.m = 4;
  cfg.attention.k = 6;
  models::VisionTransformer model(cfg);
  model.eval();
  const std::vector<Tensor*> slots = parameter_slots(model);
  ASSERT_EQ(slots.size(), model.named_parameters().size()) << "a parameter has no slot";
  std::vector<Tensor> inputs = {randn64({2, 1, 16, 16}, 1, 1.0)};
  for (Tensor* t : slots) {
    Tensor v = randn64(t->shape(), 10 + inputs.size(), 0.4);
    if (t->dim() == 1 && t->numel() <= cfg.embed_dim && t != &model.head->bias) v = v + 1.0;  // norms, gammas
    inputs.push_back(v);
  }
  auto fn = [&](const std::vector<Tensor>& in) {
    for (size_t i = 0; i < slots.size(); ++i) *slots[i] = in[i + 1];
    return model.forward(in[0]);
  };
  const GradcheckResult r = gradcheck(fn, inputs);
  EXPECT_TRUE(r.ok) << kind << ": " << r.detail << " (input 0: the image; then parameter_slots order)";
}

TEST(Vit5Grad, DenseF64) { gradcheck_vit5("dense", 2); }
TEST(Vit5Grad, MitaDwcF64) { gradcheck_vit5("mita_dwc", 1); }  // the MiTA core in f64 runs op by op: one block

// ---- layout and errors ----

TEST(Vit5, RotaryTablesLeaveClsAloneAndTurnPairs) {
  // d = 8: two halves of two pairs. Patch (row 1, col 2) of a 3x3 grid is token 1 + 1·3 + 2 = 6; the first half
  // turns by row·f_j, the second by col·f_j, f = (1, 10000^(-1/2)) (rope.py, dim d/2 = 4).
  const auto [cos, sin] = models::rotary_tables(3, 4, 8, 100.0);
  ASSERT_EQ(cos.shape(), (Shape{1 + 9 + 4, 1, 4, 1}));
  const std::vector<double> c = cos.to_vector(), s = sin.to_vector();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(c[j], 1.0) << j;  // CLS
  const double f1 = 0.01;                                 // 10000^(-2/4)
  const double want[4] = {1.0 * 1, 1.0 * f1, 2.0 * 1, 2.0 * f1};
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(c[6 * 4 + j], std::cos(want[j]), 1e-6) << j;
    EXPECT_NEAR(s[6 * 4 + j], std::sin(want[j]), 1e-6) << j;
  }
  // Register 3 of 4 sits at (1, 1) of its 2x2 grid, theta 100: f = (1, 0.1).
  const double reg[4] = {1, 0.1, 1, 0.1};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(s[13 * 4 + j], std::sin(reg[j]), 1e-6) << j;
  // A pair (x, y) turns to (x cos - y sin, y cos + x sin).
  Tensor x = Tensor::zeros({1, 14, 1, 8});
  ops::normal_(x, 0, 1);
  const std::vector<double> xs = x.to_vector(), ys = models::apply_rotary(x, cos, sin).to_vector();
  const int64_t tok = 6, pair = 2;
  const double a = xs[tok * 8 + 2 * pair], b = xs[tok * 8 + 2 * pair + 1];
  EXPECT_NEAR(ys[tok * 8 + 2 * pair], a * c[tok * 4 + pair] - b * s[tok * 4 + pair], 1e-6);
  EXPECT_NEAR(ys[tok * 8 + 2 * pair + 1], b * c[tok * 4 + pair] + a * s[tok * 4 + pair], 1e-6);
}

TEST(Vit5, OtherAttentionKindsAndPoolingsAreErrors) {
  models::ViTConfig c = tiny_vit5("dense", 16, 4, 8, 1);
  c.attention.type = "agent";
  expect_error([&] { models::VisionTransformer m(c); }, "ViT-5 model takes model.attention.type 'dense' or 'mita'");
  c = tiny_vit5("mita", 16, 4, 8, 1);
  c.attention.m = 4;
  c.attention.landmark_pool = "shifted";
  expect_error([&] { models::VisionTransformer m(c); }, "model.attention.landmark_pool 'patches'");
  c.num_registers = 3;
  c.attention.landmark_pool = "patches";
  expect_error([&] { models::VisionTransformer m(c); }, "square number");
}

TEST(Vit5, SmallHasTheOfficialTokenLayout) {
  const models::ViTConfig c = models::preset("vit5_small");
  EXPECT_TRUE(c.vit5);
  EXPECT_EQ(c.num_registers, 4);
  EXPECT_EQ(c.num_tokens(), 1 + 196 + 4);
}

}  // namespace
}  // namespace vt::test
