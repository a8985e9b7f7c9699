// The Table 2 baselines (flatten, inline, mhla, pola, bra): f64 finite-difference gradchecks of each
// whole layer with explicit weights, make_attention's dispatch and its errors naming the key, and a ViT of each
// kind whose every parameter gets a gradient. Their agreement with the authors' modules is test_baseline_fixtures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "test_util.h"
#include "autograd/gradcheck.h"
#include "core/rng.h"
#include "engine/weight_layouts.h"
#include "engine/weights_load.h"
#include "io/safetensors.h"
#include "models/bra_attention.h"
#include "models/focused_linear_attention.h"
#include "models/inline_attention.h"
#include "models/mhla_attention.h"
#include "models/pola_attention.h"
#include "models/registry.h"
#include "models/vit.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

constexpr int64_t kB = 2, kN = 10, kC = 8, kH = 2;  // CLS + a 3×3 patch grid

Tensor randn_t(const Shape& shape, uint64_t seed, double std = 1.0, DType dt = DType::f64) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std * rng::normal_at(seed, 0, i);
  return Tensor::from_vector(v, shape, dt);
}

void expect_gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& in) {
  GradcheckResult r = gradcheck(fn, in);
  EXPECT_TRUE(r.ok) << r.detail << " (max abs err " << r.max_abs_err << ")";
}

TEST(BaselineKindsGrad, FocusedLinearAttention) {
  // x, qkv W/b, scale, positional encoding, proj W/b.
  expect_gradcheck(
      [](const std::vector<Tensor>& t) {
        return models::focused_linear_attention(t[0], t[1], t[2], t[3], t[4], t[5], t[6], kH);
      },
      {randn_t({kB, kN, kC}, 1), randn_t({3 * kC, kC}, 2, 0.4), randn_t({3 * kC}, 3, 0.1), randn_t({1, 1, kC}, 4, 0.5),
       randn_t({1, kN, kC}, 5, 0.3), randn_t({kC, kC}, 6, 0.4), randn_t({kC}, 7, 0.1)});
}

TEST(BaselineKindsGrad, InLineAttention) {
  // x, qkv W/b, residual.0 W/b, residual.2 W/b, proj W/b.
  expect_gradcheck(
      [](const std::vector<Tensor>& t) {
        return models::inline_attention(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], kH);
      },
      {randn_t({kB, kN, kC}, 11), randn_t({3 * kC, kC}, 12, 0.4), randn_t({3 * kC}, 13, 0.1),
       randn_t({kC, kC / kH, 1}, 14, 0.5), randn_t({kC}, 15, 0.1), randn_t({9 * kC, kC / kH, 1}, 16, 0.5),
       randn_t({9 * kC}, 17, 0.1), randn_t({kC, kC}, 18, 0.4), randn_t({kC}, 19, 0.1)});
}

TEST(BaselineKindsGrad, PolaAttention) {
  // x, qkv W/b, power, scale, positional encoding, proj W/b. The exponents p = 1 + 4·sigmoid(power) go up to 5.
  expect_gradcheck(
      [](const std::vector<Tensor>& t) {
        return models::pola_attention(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], kH);
      },
      {randn_t({kB, kN, kC}, 21), randn_t({3 * kC, kC}, 22, 0.4), randn_t({3 * kC}, 23, 0.1),
       randn_t({1, kH, 1, kC / kH}, 24, 1.0), randn_t({1, 1, kC}, 25, 0.5), randn_t({1, kN, kC}, 26, 0.3),
       randn_t({kC, kC}, 27, 0.4), randn_t({kC}, 28, 0.1)});
}

TEST(BaselineKindsGrad, Mhla) {
  // An 8x8 token grid without CLS (four 4x4 blocks), C = 4, 2 heads: x, norm W/b, qkv W/b, the block mixing, proj W/b.
  const int64_t N = 64, C = 4;
  expect_gradcheck(
      [](const std::vector<Tensor>& t) {
        return models::mhla_attention(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], kH);
      },
      {randn_t({1, N, C}, 31), randn_t({C}, 32, 0.3) + 1.0, randn_t({C}, 33, 0.1), randn_t({3 * C, C}, 34, 0.4),
       randn_t({3 * C}, 35, 0.1), randn_t({4, 4, 1, 1}, 36, 0.4), randn_t({C, C}, 37, 0.4), randn_t({C}, 38, 0.1)});
}

TEST(BaselineKindsGrad, Bra) {
  // x, qkv W/b, lepe W/b, proj W/b; CLS + a 4x4 patch map in 2x2 regions of 2x2 patches, each routed to 2 of the 4
  // (the routing is a discrete choice: no gradient flows through it, and these draws are away from its ties).
  const int64_t N = 17;
  for (const char* scale : {"head_dim", "qk_dim"}) {
    SCOPED_TRACE(scale);
    models::BraOptions o;
    o.heads = kH, o.n_win = 2, o.topk = 2, o.scale = models::bra_scale(scale, kC, kH);
    expect_gradcheck(
        [&](const std::vector<Tensor>& t) {
          return models::bra_attention(t[0], t[1], t[2], t[3], t[4], t[5], t[6], o);
        },
        {randn_t({kB, N, kC}, 41), randn_t({3 * kC, kC}, 42, 0.4), randn_t({3 * kC}, 43, 0.1),
         randn_t({kC, 1, 5, 5}, 44, 0.3), randn_t({kC}, 45, 0.1), randn_t({kC, kC}, 46, 0.4), randn_t({kC}, 47, 0.1)});
  }
}

TEST(BaselineKinds, BraOverAllRegionsIsDenseAttentionPlusItsConv) {
  // topk = n_win²: every patch query sees CLS and all patches, as the CLS query does: softmax attention over all N
  // tokens, i.e. timm's dense Attention with the same qkv / proj, plus the LCE conv of V on the patch rows (zero
  // here). And the scales: head_dim is dense attention's d^-1/2, qk_dim is C^-1/2.
  EXPECT_DOUBLE_EQ(models::bra_scale("head_dim", 384, 6), 0.125);
  EXPECT_DOUBLE_EQ(models::bra_scale("qk_dim", 64, 2), 0.125);
  expect_error([] { models::bra_scale("sqrt", 8, 2); }, "model.attention.bra_scale");
  Generator gen(3);
  models::DenseAttention dense(kC, kH, 0.0, 0.0, gen);
  const int64_t N = 37;  // CLS + 6x6 patches, 3x3 regions
  models::BraOptions o;
  o.heads = kH, o.n_win = 3, o.topk = 9, o.scale = models::bra_scale("head_dim", kC, kH);
  const Tensor x = randn_t({kB, N, kC}, 48, 1.0, DType::f32);
  const Tensor zero_w = Tensor::zeros({kC, 1, 5, 5}), zero_b = Tensor::zeros({kC});
  const std::vector<double> want = dense.forward(x).to_vector();
  const std::vector<double> got = models::bra_attention(x, dense.qkv->weight, dense.qkv->bias, zero_w, zero_b,
                                                        dense.proj->weight, dense.proj->bias, o)
                                      .to_vector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << i;
  // With fewer routed regions the patch rows differ from dense attention; the CLS row does not.
  o.topk = 2;
  const std::vector<double> routed = models::bra_attention(x, dense.qkv->weight, dense.qkv->bias, zero_w, zero_b,
                                                           dense.proj->weight, dense.proj->bias, o)
                                         .to_vector();
  double cls_diff = 0, patch_diff = 0;
  for (size_t i = 0; i < routed.size(); ++i) {
    const bool cls = (i / kC) % N == 0;
    (cls ? cls_diff : patch_diff) = std::max(cls ? cls_diff : patch_diff, std::abs(routed[i] - want[i]));
  }
  EXPECT_LT(cls_diff, 1e-5);
  EXPECT_GT(patch_diff, 1e-3);
}

TEST(BaselineKinds, MhlaBlockMixingInit) {
  // 8x8 tokens: 2x2 blocks, centre distances 0, 1 (side) and √2 (diagonal) → cos(0), cos(π/4 / √2), cos(π/4);
  // each column sums to 1.
  const std::vector<double> m = models::mhla_block_mixing_init(8, DType::f64).to_vector();
  const double a = 1.0, b = std::cos(M_PI / 4 / std::sqrt(2.0)), c = std::cos(M_PI / 4), z = a + 2 * b + c;
  const std::vector<double> want = {a / z, b / z, b / z, c / z, b / z, a / z, c / z, b / z,
                                    b / z, c / z, a / z, b / z, c / z, b / z, b / z, a / z};
  ASSERT_EQ(m.size(), want.size());
  for (size_t i = 0; i < m.size(); ++i) EXPECT_NEAR(m[i], want[i], 1e-15) << i;
  expect_error([] { models::mhla_block_mixing_init(4, DType::f64); }, "two 4x4 blocks");
}

TEST(BaselineKinds, DispatchAndErrorsNameTheKey) {
  Generator gen(9);
  models::AttentionConfig cfg;
  cfg.type = "flatten";
  EXPECT_TRUE(
      std::dynamic_pointer_cast<models::FocusedLinearAttention>(models::make_attention(cfg, kC, kH, 0, gen, kN)));
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 0); }, "'flatten'");
  cfg.type = "inline";
  EXPECT_TRUE(std::dynamic_pointer_cast<models::InLineAttention>(models::make_attention(cfg, kC, kH, 0, gen, kN)));
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 12); }, "model.attention.type 'inline'");
  cfg.type = "pola";
  EXPECT_TRUE(std::dynamic_pointer_cast<models::PolaAttention>(models::make_attention(cfg, kC, kH, 0, gen, kN)));
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 0); }, "'pola'");
  expect_error([&] { models::make_attention(cfg, 6, 2, 0, gen, kN); }, "even head width");  // d = 3
  cfg.type = "mhla";
  EXPECT_TRUE(std::dynamic_pointer_cast<models::MhlaAttention>(models::make_attention(cfg, kC, kH, 0, gen, 64)));
  // A ViT's tokens have a CLS token (N = 1 + G²): MHLA's blocks need N = G² itself.
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 65); }, "model.attention.type 'mhla'");
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 36); }, "model.attention.type 'mhla'");
  cfg.type = "bra";
  cfg.n_win = 3, cfg.topk = 4;
  EXPECT_TRUE(std::dynamic_pointer_cast<models::BraAttention>(models::make_attention(cfg, kC, kH, 0, gen, 37)));
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 0); }, "'bra'");
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 36); }, "model.attention.type 'bra'");
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 17); }, "model.attention.n_win");  // 4x4 in 3x3
  cfg.n_win = 2, cfg.topk = 5;
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 17); }, "model.attention.topk");
  cfg.topk = 4, cfg.bra_scale = "sqrt";
  expect_error([&] { models::make_attention(cfg, kC, kH, 0, gen, 17); }, "model.attention.bra_scale");
  // The layer on a token count its regions do not fit names the key.
  cfg.bra_scale = "head_dim";
  auto bra = models::make_attention(cfg, kC, kH, 0, gen, 17);
  expect_error([&] { bra->forward(Tensor::zeros({1, 10, kC})); }, "model.attention.n_win");
  // The layer with a token count it was not built for: the positional encoding names the mismatch.
  cfg.type = "flatten";
  auto flatten = models::make_attention(cfg, kC, kH, 0, gen, kN);
  expect_error([&] { flatten->forward(Tensor::zeros({1, 17, kC})); }, "positional_encoding");
}

TEST(BaselineKinds, MhlaViTHasTheOfficialLayout) {
  // vit_micro: 28² images in 7² patches, a 4x4 grid, padded with 14 zero pixels a side to 56² (8x8 patches, four
  // 4x4 blocks); no CLS token; the classifier reads the mean token.
  models::ViTConfig v = models::preset("vit_micro");
  v.embed_dim = 12, v.depth = 1, v.num_heads = 3;
  v.attention.type = "mhla";
  models::VisionTransformer m(v);
  EXPECT_FALSE(m.cls_token.defined());
  EXPECT_EQ(m.pos_embed.shape(), (Shape{1, 64, 12}));
  for (const auto& [name, t] : m.named_parameters()) EXPECT_NE(name, "cls_token");
  Tensor x = randn_t({2, 1, 28, 28}, 91, 1.0, DType::f32);
  EXPECT_EQ(m.forward_features(x).shape(), (Shape{2, 64, 12}));
  EXPECT_EQ(m.forward(x).shape(), (Shape{2, 10}));
  expect_error([&] { m.forward(randn_t({1, 1, 56, 56}, 92, 1.0, DType::f32)); }, "expected input [B, 1, 28, 28]");
}

TEST(BaselineKinds, MhlaViTWeightsLoadBackStrictly) {
  // A saved MHLA model's weights (pos_embed over 64 patches, no cls_token) load back without being "resampled".
  models::ViTConfig v = models::preset("vit_micro");
  v.embed_dim = 12, v.depth = 1, v.num_heads = 3, v.seed = 1;
  v.attention.type = "mhla";
  models::VisionTransformer a(v);
  v.seed = 2;
  models::VisionTransformer b(v);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("vt_mhla_" + std::to_string(::getpid()) + ".safetensors")).string();
  io::save_safetensors(path, a.state_dict());
  engine::load_vit_weights(b, path, {});
  std::filesystem::remove(path);
  EXPECT_EQ(b.pos_embed.to_vector(), a.pos_embed.to_vector());
  Tensor x = randn_t({1, 1, 28, 28}, 93, 1.0, DType::f32);
  EXPECT_EQ(b.forward(x).to_vector(), a.forward(x).to_vector());
}

// `ours` exported to the official modules' names, checked to hold every one of `names`.
io::NamedTensors official_layout_holding(const io::NamedTensors& ours, std::initializer_list<const char*> names) {
  io::NamedTensors file = ours;
  engine::to_official_layout(file);
  for (const char* name : names)
    EXPECT_TRUE(std::any_of(file.begin(), file.end(), [&](const auto& e) { return e.first == name; })) << name;
  return file;
}

// The same tensor names in the same order.
void expect_same_names(const io::NamedTensors& got, const io::NamedTensors& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].first, want[i].first);
}

TEST(BaselineKinds, MhlaOfficialNamesRoundTrip) {
  // Exported for the official modules, MHLA's qkv / proj read to_qkv / to_out.0; read back, ours again.
  models::ViTConfig v = models::preset("vit_micro");
  v.embed_dim = 12, v.depth = 1, v.num_heads = 3;
  v.attention.type = "mhla";
  const io::NamedTensors ours = models::VisionTransformer(v).state_dict();
  io::NamedTensors file =
      official_layout_holding(ours, {"blocks.0.attn.to_qkv.weight", "blocks.0.attn.to_out.0.bias",
                                     "blocks.0.attn.norm.weight", "blocks.0.attn.piece_attn.conv.weight"});
  engine::from_official_layout(file);
  expect_same_names(file, ours);
}

TEST(BaselineKinds, BraOfficialNamesRoundTrip) {
  // Exported for the official module, BRA's qkv / proj read qkv.qkv / wo (lepe keeps its name); read back, ours.
  models::ViTConfig v = models::preset("vit_micro");
  v.embed_dim = 12, v.depth = 1, v.num_heads = 3;
  v.attention.type = "bra", v.attention.n_win = 2, v.attention.topk = 2;
  const io::NamedTensors ours = models::VisionTransformer(v).state_dict();
  io::NamedTensors file = official_layout_holding(
      ours, {"blocks.0.attn.qkv.qkv.weight", "blocks.0.attn.qkv.qkv.bias", "blocks.0.attn.wo.weight",
             "blocks.0.attn.wo.bias", "blocks.0.attn.lepe.weight", "blocks.0.attn.lepe.bias"});
  const std::vector<std::string> notes = engine::from_official_layout(file);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("4 BRA tensor(s)"), std::string::npos) << notes[0];
  expect_same_names(file, ours);
}

TEST(BaselineKinds, ViTWithEachKindTrainsEveryParameter) {
  for (const char* type : {"flatten", "inline", "mhla", "pola", "bra"}) {
    models::ViTConfig v = models::preset("vit_micro");
    v.embed_dim = 12, v.depth = 2, v.num_heads = 3;
    v.attention.type = type;
    v.attention.n_win = 2, v.attention.topk = 2;  // bra: the 4x4 patch grid in 2x2 regions
    models::VisionTransformer m(v);
    Tensor x = randn_t({2, 1, 28, 28}, 90, 1.0, DType::f32);
    Tensor logits = m.forward(x);
    ASSERT_EQ(logits.shape(), (Shape{2, 10})) << type;
    ops::cross_entropy(logits, Tensor::from_vector({1, 7}, {2}, DType::i64)).backward();
    for (const auto& [name, p] : m.named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << type << " " << name;
      // Only the CLS row of the last block reaches the head, and InLine's local residual and BRA's LCE conv add to
      // the patch rows.
      if (name.rfind("blocks.1.attn.residual.", 0) == 0 || name.rfind("blocks.1.attn.lepe.", 0) == 0) continue;
      double s = 0;
      for (double g : p.grad().to_vector()) s += std::abs(g);
      EXPECT_GT(s, 0) << type << " " << name;
    }
  }
}

}  // namespace
}  // namespace vt::test
