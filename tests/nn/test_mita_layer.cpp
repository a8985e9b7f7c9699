// The MiTA layer (models/mita_attention.h): finite-difference gradchecks in f64 of the whole layer and its
// route-only / top-2 / DWC / Gate variants, the training path (one node for the core and the DWC) against the
// op-by-op one, DWC and Gate forward against loops, weight sharing with DenseAttention, parameter counts, init and
// config validation.
#include <gtest/gtest.h>

#include <map>

#include "autograd/gradcheck.h"
#include "models/mita_attention.h"
#include "models/registry.h"
#include "ops/ops.h"
#include "tests/nn/mita_test_util.h"

namespace vt::test {
namespace {

using models::AttentionConfig;
using models::MitaAttention;
using models::MitaDebug;
using models::MitaOptions;

AttentionConfig mita_cfg(const std::string& type, int64_t m, int64_t k, int64_t s = 1) {
  AttentionConfig c;
  c.type = type, c.m = m, c.k = k, c.s = s;
  return c;
}

// ---- gradients ----

// Smallest gap between the selected and the first unselected score, over every top-k row and every routing
// column: the selections must be far from ties for finite differences to see a fixed selection.
double selection_margin(const MitaDebug& dbg, const MitaOptions& o) {
  double margin = 1e300;
  const Tensor ks = dbg.key_scores, gs = dbg.gate_scores.transpose(2, 3).contiguous();  // rows: per expert / query
  for (auto [t, n] : {std::pair{ks, o.k}, std::pair{gs, o.s}}) {
    const auto v = t.to_vector();
    const int64_t R = t.size(-1);
    if (n >= R) continue;
    for (size_t r = 0; r < v.size() / R; ++r) {
      std::vector<double> row(v.begin() + r * R, v.begin() + (r + 1) * R);
      std::sort(row.rbegin(), row.rend());
      margin = std::min(margin, row[n - 1] - row[n]);
    }
  }
  return margin;
}

void gradcheck_layer(const AttentionConfig& cfg, uint64_t seed) {
  const int64_t B = 2, N = 17, C = 8, H = 2;
  Generator gen(seed);
  MitaAttention attn(cfg, C, H, 0.0, gen);
  // Random f64 weights large enough that the selections have clear margins.
  std::vector<Tensor> inputs = {randn_t({B, N, C}, seed + 1)};
  std::vector<std::pair<std::string, Tensor*>> slots;
  auto add = [&](const std::string& name, Tensor* slot, double std) {
    inputs.push_back(randn_t(slot->shape(), seed + 2 + slots.size(), std));
    slots.emplace_back(name, slot);
  };
  auto& in_proj = cfg.gate ? attn.qkvg : attn.qkv;
  add("qkv(g).weight", &in_proj->weight, 0.5);
  add("qkv(g).bias", &in_proj->bias, 0.2);
  add("proj.weight", &attn.proj->weight, 0.4);
  add("proj.bias", &attn.proj->bias, 0.2);
  if (attn.dwc) {
    add("dwc.weight", &attn.dwc->weight, 0.4);
    add("dwc.bias", &attn.dwc->bias, 0.2);
  }
  auto fn = [&](const std::vector<Tensor>& in) {
    for (size_t i = 0; i < slots.size(); ++i) *slots[i].second = in[i + 1];
    return attn.forward(in[0]);
  };
  MitaDebug dbg;
  for (size_t i = 0; i < slots.size(); ++i) *slots[i].second = inputs[i + 1];
  attn.forward(inputs[0], &dbg);
  if (!attn.options().compress_only) {  // compress-only selects nothing
    ASSERT_GT(selection_margin(dbg, attn.options()), 1e-3) << "near tie in the selections: pick another seed";
  }
  GradcheckResult r = gradcheck(fn, inputs);
  EXPECT_TRUE(r.ok) << cfg.type << (cfg.dwc ? "+dwc" : "") << (cfg.gate ? "+gate" : "") << ": " << r.detail
                    << " (inputs: x then " << slots.size() << " parameters in order)";
}

TEST(MitaAttentionGrad, Official) { gradcheck_layer(mita_cfg("mita", 4, 5), 11); }
TEST(MitaAttentionGrad, RouteOnly) { gradcheck_layer(mita_cfg("mita_route", 4, 6), 12); }
TEST(MitaAttentionGrad, CompressOnly) { gradcheck_layer(mita_cfg("mita_compress", 4, 5), 13); }
TEST(MitaAttentionGrad, TopTwoPatchesPaperScale) {
  AttentionConfig c = mita_cfg("mita", 9, 4, 2);
  c.landmark_pool = "patches", c.shared_scale = "paper";
  gradcheck_layer(c, 17);
}
TEST(MitaAttentionGrad, Dwc) {
  AttentionConfig c = mita_cfg("mita", 4, 5);
  c.dwc = true;
  gradcheck_layer(c, 14);
}
TEST(MitaAttentionGrad, DwcGate) {
  AttentionConfig c = mita_cfg("mita", 4, 5);
  c.dwc = c.gate = true;
  gradcheck_layer(c, 15);
}

// The layer's training path (ops::mita_qkv_attention: core and DWC in one node) equals the per-operand path that
// a MitaDebug forces (the op-by-op reference): output and every parameter's gradient (f64).
TEST(MitaAttention, TrainingPathEqualsThePerOperandPath) {
  const int64_t B = 2, N = 17, C = 8, H = 2;
  uint64_t seed = 40;
  for (const char* type : {"mita", "mita_route"})
    for (int variant = 0; variant < 3; ++variant) {  // plain, +DWC, +DWC+gate
      AttentionConfig cfg = mita_cfg(type, 4, 5);
      cfg.dwc = variant >= 1, cfg.gate = variant == 2;
      const std::string what = std::string(type) + (cfg.dwc ? "+dwc" : "") + (cfg.gate ? "+gate" : "");
      Generator gen(seed++);
      MitaAttention attn(cfg, C, H, 0.0, gen);
      auto& in_proj = cfg.gate ? attn.qkvg : attn.qkv;
      std::map<std::string, Tensor*> params = {{"qkv(g).weight", &in_proj->weight},
                                               {"qkv(g).bias", &in_proj->bias},
                                               {"proj.weight", &attn.proj->weight},
                                               {"proj.bias", &attn.proj->bias}};
      if (attn.dwc) params["dwc.weight"] = &attn.dwc->weight, params["dwc.bias"] = &attn.dwc->bias;
      std::map<std::string, Tensor> values;
      for (auto& [name, slot] : params) values[name] = randn_t(slot->shape(), seed++, 0.4);
      const Tensor x = randn_t({B, N, C}, seed++), w = randn_t({B, N, C}, seed++);
      std::vector<std::vector<double>> outs;
      std::vector<std::map<std::string, std::vector<double>>> grads(2);
      for (int path = 0; path < 2; ++path) {
        for (auto& [name, slot] : params) {  // fresh leaves: no gradient left from the other path
          *slot = values[name].detach();
          slot->set_requires_grad(true);
        }
        MitaDebug dbg;
        const Tensor out = path == 0 ? attn.forward(x) : attn.forward(x, &dbg);
        ops::sum(out * w).backward();
        outs.push_back(out.to_vector());
        for (auto& [name, slot] : params) grads[path][name] = slot->grad().to_vector();
      }
      expect_near_all(outs[0], outs[1], 1e-12, what + " forward");
      for (const auto& [name, g] : grads[0]) expect_near_all(g, grads[1][name], 1e-10, what + " d" + name);
    }
}

// ---- weights shared with dense attention ----

TEST(MitaAttention, RouteOnlyWithAllKeysEqualsDenseAttentionWithTheSameWeights) {
  const int64_t N = 17, C = 12, H = 3;
  Generator gen(5);
  models::DenseAttention dense(C, H, 0.0, 0.0, gen);
  for (auto& [name, p] : dense.named_parameters()) p.copy_(randn_t(p.shape(), 50 + p.numel(), 0.3));
  MitaAttention route(mita_cfg("mita_route", 4, N), C, H, 0.0, gen);
  route.load_state_dict(dense.state_dict());  // same names and shapes: qkv.{weight,bias}, proj.{weight,bias}
  Tensor x = randn_t({2, N, C}, 6, 1.0, DType::f32);
  expect_near_all(route.forward(x).to_vector(), dense.forward(x).to_vector(), 2e-6, "route-only vs dense");
}

// ---- DWC and Gate forward ----

// proj((MiTA(q, k, v) + pad(dwc(V patches))) ⊙ SiLU(g)) with the projections, the depth-wise conv, SiLU and proj
// written as loops; the core is the one checked against the brute-force reference in test_mita.cpp.
TEST(MitaAttention, DwcAndGateForwardMatchLoops) {
  const int64_t B = 2, G = 4, N = G * G + 1, C = 6, H = 2;
  AttentionConfig cfg = mita_cfg("mita", 4, 5);
  cfg.dwc = cfg.gate = true;
  Generator gen(3);
  MitaAttention attn(cfg, C, H, 0.0, gen);
  uint64_t seed = 900;
  for (auto& [name, p] : attn.named_parameters()) p.copy_(randn_t(p.shape(), seed++, 0.4));
  Tensor x = randn_t({B, N, C}, 901, 1.0, DType::f32);
  const auto xv = x.to_vector(), W = attn.qkvg->weight.to_vector(), bW = attn.qkvg->bias.to_vector();
  const auto P = attn.proj->weight.to_vector(), bP = attn.proj->bias.to_vector();
  const auto cw = attn.dwc->weight.to_vector(), cb = attn.dwc->bias.to_vector();
  std::vector<double> part[4];  // q, k, v, g: [B, N, C] each; output row j·C + c of qkvg is part j, channel c
  for (int j = 0; j < 4; ++j) {
    part[j].assign(B * N * C, 0.0);
    for (int64_t t = 0; t < B * N; ++t)
      for (int64_t c = 0; c < C; ++c) {
        double acc = bW[j * C + c];
        for (int64_t i = 0; i < C; ++i) acc += W[(j * C + c) * C + i] * xv[t * C + i];
        part[j][t * C + c] = acc;
      }
  }
  const Shape shape{B, N, C};
  const auto core = models::mita_core(Tensor::from_vector(part[0], shape, DType::f64),
                                      Tensor::from_vector(part[1], shape, DType::f64),
                                      Tensor::from_vector(part[2], shape, DType::f64), attn.options())
                        .to_vector();
  std::vector<double> y(B * N * C), expected(B * N * C);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        double conv = 0;
        if (n > 0) {  // patch n sits at (r, col) of the G×G grid, no shift
          const int64_t r = (n - 1) / G, col = (n - 1) % G;
          conv = cb[c];
          for (int64_t dr = -1; dr <= 1; ++dr)
            for (int64_t dc = -1; dc <= 1; ++dc) {
              const int64_t rr = r + dr, cc = col + dc;
              if (rr < 0 || rr >= G || cc < 0 || cc >= G) continue;
              conv += cw[c * 9 + (dr + 1) * 3 + (dc + 1)] * part[2][(b * N + 1 + rr * G + cc) * C + c];
            }
        }
        const double g = part[3][(b * N + n) * C + c];
        y[(b * N + n) * C + c] = (core[(b * N + n) * C + c] + conv) * g / (1 + std::exp(-g));
      }
  for (int64_t t = 0; t < B * N; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = bP[c];
      for (int64_t i = 0; i < C; ++i) acc += P[c * C + i] * y[t * C + i];
      expected[t * C + c] = acc;
    }
  expect_near_all(attn.forward(x).to_vector(), expected, 2e-5, "mita+dwc+gate");
}

// ---- parameters ----

// Through the make_attention factory in a DeiT-T ViT (timm count 5,717,416): MiTA adds no parameters, DWC adds
// 10·C per layer (9C weights + C bias), the Gate C² + C (qkvg [4C, C] instead of qkv [3C, C]).
TEST(MitaAttention, ParameterCountsOfDeiTTiny) {
  const int64_t C = 192, depth = 12;
  auto count = [&](const std::string& type, bool dwc, bool gate) {
    models::ViTConfig cfg = models::preset("deit_tiny_patch16_224");
    cfg.attention.type = type;
    cfg.attention.dwc = dwc, cfg.attention.gate = gate;
    return models::VisionTransformer(cfg).num_parameters();
  };
  EXPECT_EQ(count("mita", false, false), 5717416);
  EXPECT_EQ(count("mita", true, false), 5717416 + depth * 10 * C);
  EXPECT_EQ(count("mita", false, true), 5717416 + depth * (C * C + C));
  EXPECT_EQ(count("mita", true, true), 6185128);
}

TEST(MitaAttention, ParameterNamesAndPyTorchDefaultInit) {
  const int64_t C = 24;
  AttentionConfig c = mita_cfg("mita", 25, 0);
  c.dwc = c.gate = true;
  Generator gen(0);
  MitaAttention attn(c, C, 3, 0, gen);
  std::map<std::string, Shape> shapes;
  for (auto& [name, t] : attn.named_parameters()) {
    shapes[name] = t.shape();
    // U(±1/√fan_in): fan_in = C for the Linears, 9 for the depth-wise conv; biases too, so none is all zero.
    const double bound = name.rfind("dwc", 0) == 0 ? 1.0 / 3.0 : 1.0 / std::sqrt(double(C));
    double max_abs = 0;
    for (double v : t.to_vector()) max_abs = std::max(max_abs, std::abs(v));
    EXPECT_LE(max_abs, bound) << name;
    EXPECT_GT(max_abs, 0.5 * bound) << name;
  }
  EXPECT_EQ(shapes, (std::map<std::string, Shape>{{"qkvg.weight", {4 * C, C}},
                                                  {"qkvg.bias", {4 * C}},
                                                  {"proj.weight", {C, C}},
                                                  {"proj.bias", {C}},
                                                  {"dwc.weight", {C, 1, 3, 3}},
                                                  {"dwc.bias", {C}}}));
}

// ---- configuration ----

TEST(MitaAttention, DefaultKAndValidationErrorsNameTheConfigKey) {
  Generator gen(0);
  EXPECT_EQ(MitaAttention(mita_cfg("mita", 9, 0), 12, 3, 0, gen).options().k, 9);
  EXPECT_EQ(MitaAttention(mita_cfg("mita_route", 9, 0), 12, 3, 0, gen).options().k, 18);
  Tensor x17 = randn_t({1, 17, 12}, 1, 1.0, DType::f32), x12 = randn_t({1, 12, 12}, 2, 1.0, DType::f32);
  expect_error([&] { MitaAttention(mita_cfg("mita", 5, 4), 12, 3, 0, gen).forward(x17); }, "model.attention.m");
  expect_error([&] { MitaAttention(mita_cfg("mita", 4, 18), 12, 3, 0, gen).forward(x17); }, "model.attention.k");
  expect_error([&] { MitaAttention(mita_cfg("mita", 4, 4, 5), 12, 3, 0, gen); }, "model.attention.s");
  AttentionConfig c = mita_cfg("mita", 4, 4);
  c.dwc = true;
  expect_error([&] { MitaAttention(c, 12, 3, 0, gen).forward(x12); }, "model.attention.dwc");
  c = mita_cfg("mita", 4, 4);
  c.landmark_pool = "cls";
  expect_error([&] { MitaAttention(c, 12, 3, 0, gen); }, "model.attention.landmark_pool");
  c = mita_cfg("mita", 4, 4);
  c.shared_scale = "half";
  expect_error([&] { MitaAttention(c, 12, 3, 0, gen); }, "model.attention.shared_scale");
  expect_error([&] { models::make_mita_attention(mita_cfg("dense", 4, 4), 12, 3, 0, gen); }, "model.attention.type");
  // 1-D pooling accepts any m (12 tokens → 11 pooled), and gate without dwc needs no grid.
  c = mita_cfg("mita", 5, 4);
  c.gate = true;
  EXPECT_EQ(MitaAttention(c, 12, 3, 0, gen).forward(x12).shape(), (Shape{1, 12, 12}));
}

}  // namespace
}  // namespace vt::test
