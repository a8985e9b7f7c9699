// The MiTA paper's baselines: Agent attention (minus and with the official biases) and linear attention, each
// against an element-by-element f64 loop reference and by f64 gradcheck of the whole layer; the bilinear bias
// resize against hand-computed values; parameter names/shapes/init; make_attention dispatch and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "test_util.h"
#include "autograd/gradcheck.h"
#include "core/rng.h"
#include "models/agent_attention.h"
#include "models/linear_attention.h"
#include "models/mita_attention.h"
#include "models/registry.h"
#include "models/vit.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

using Vec = std::vector<double>;

Tensor randn_t(const Shape& shape, uint64_t seed, double std = 1.0, DType dt = DType::f64) {
  Vec v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std * rng::normal_at(seed, 0, i);
  return Tensor::from_vector(v, shape, dt);
}

void expect_close(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

// ---- brute-force references (plain loops on row-major vectors) ----

// y [rows, out] = x [rows, in] Wᵀ + b (b may be empty).
Vec ref_linear(const Vec& x, const Vec& w, const Vec& b, int64_t rows, int64_t in, int64_t out) {
  Vec y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * w[o * in + i];
      y[r * out + o] = acc;
    }
  return y;
}

void softmax_inplace(Vec& row) {
  double mx = row[0], z = 0;
  for (double v : row) mx = std::max(mx, v);
  for (double& v : row) z += (v = std::exp(v - mx));
  for (double& v : row) v /= z;
}

// Bilinear sample of a 7×7 plane at output pixel (oy, ox) of an out×out resize (PyTorch, align_corners=False).
double ref_bilinear(const double* plane, int64_t in, int64_t out, int64_t oy, int64_t ox) {
  auto coord = [&](int64_t o, int64_t& i0, int64_t& i1, double& frac) {
    double src = (o + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
    if (src < 0) src = 0;
    i0 = static_cast<int64_t>(std::floor(src));
    i1 = std::min(i0 + 1, in - 1);
    frac = src - static_cast<double>(i0);
  };
  int64_t y0, y1, x0, x1;
  double fy, fx;
  coord(oy, y0, y1, fy);
  coord(ox, x0, x1, fx);
  return (1 - fy) * ((1 - fx) * plane[y0 * in + x0] + fx * plane[y0 * in + x1]) +
         fy * ((1 - fx) * plane[y1 * in + x0] + fx * plane[y1 * in + x1]);
}

struct RefBiases {  // the official tensors, flattened row-major
  Vec an, na, ah, aw, ha, wa, ac, ca;
};

// Agent attention on q, k, v [B, N, C] → [B, N, C], pooling and both softmaxes written out element by element.
Vec ref_agent_core(const Vec& q, const Vec& k, const Vec& v, int64_t B, int64_t N, int64_t C, int64_t H, int64_t n,
                   bool patches_only, const RefBiases* bias) {
  const int64_t d = C / H, G = static_cast<int64_t>(std::lround(std::sqrt(N - 1.0)));
  const int64_t p = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(n)))), first = patches_only;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Vec out(static_cast<size_t>(B * N * C), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    // Agents: PyTorch adaptive-average bins [floor(i·G/p), ceil((i+1)·G/p)) over the token grid.
    Vec A(static_cast<size_t>(n * C), 0.0);
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < p; ++j) {
        const int64_t r0 = i * G / p, r1 = ((i + 1) * G + p - 1) / p, c0 = j * G / p, c1 = ((j + 1) * G + p - 1) / p;
        for (int64_t c = 0; c < C; ++c) {
          double s = 0;
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t cc = c0; cc < c1; ++cc) s += q[(b * N + first + r * G + cc) * C + c];
          A[(i * p + j) * C + c] = s / static_cast<double>((r1 - r0) * (c1 - c0));
        }
      }
    for (int64_t h = 0; h < H; ++h) {
      // Position bias of agent a over token t, and agent bias of token t over agent a (official layout).
      auto pos_bias = [&](int64_t a, int64_t t) {
        if (!bias) return 0.0;
        const int64_t hn = h * n + a;
        if (t == 0) return bias->ac[hn];
        const int64_t r = (t - 1) / G, c = (t - 1) % G;
        return ref_bilinear(&bias->an[hn * 49], 7, G, r, c) + bias->ah[hn * G + r] + bias->aw[hn * G + c];
      };
      auto tok_bias = [&](int64_t t, int64_t a) {
        if (!bias) return 0.0;
        if (t == 0) return bias->ca[h * n + a];
        const int64_t r = (t - 1) / G, c = (t - 1) % G;
        return ref_bilinear(&bias->na[(h * n + a) * 49], 7, G, r, c) + bias->ha[(h * G + r) * n + a] +
               bias->wa[(h * G + c) * n + a];
      };
      Vec agent_v(static_cast<size_t>(n * d), 0.0);
      for (int64_t a = 0; a < n; ++a) {
        Vec row(static_cast<size_t>(N));
        for (int64_t t = 0; t < N; ++t) {
          double s = 0;
          for (int64_t e = 0; e < d; ++e) s += A[a * C + h * d + e] * k[(b * N + t) * C + h * d + e];
          row[t] = s * scale + pos_bias(a, t);
        }
        softmax_inplace(row);
        for (int64_t t = 0; t < N; ++t)
          for (int64_t e = 0; e < d; ++e) agent_v[a * d + e] += row[t] * v[(b * N + t) * C + h * d + e];
      }
      for (int64_t t = 0; t < N; ++t) {
        Vec row(static_cast<size_t>(n));
        for (int64_t a = 0; a < n; ++a) {
          double s = 0;
          for (int64_t e = 0; e < d; ++e) s += q[(b * N + t) * C + h * d + e] * A[a * C + h * d + e];
          row[a] = s * scale + tok_bias(t, a);
        }
        softmax_inplace(row);
        for (int64_t a = 0; a < n; ++a)
          for (int64_t e = 0; e < d; ++e) out[(b * N + t) * C + h * d + e] += row[a] * agent_v[a * d + e];
      }
    }
  }
  return out;
}

// Splits the qkv projection [B·N, 3C] into q, k, v [B·N, C].
void ref_split_qkv(const Vec& qkv, int64_t rows, int64_t C, Vec& q, Vec& k, Vec& v) {
  q.assign(static_cast<size_t>(rows * C), 0), k = q, v = q;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) {
      q[r * C + c] = qkv[r * 3 * C + c];
      k[r * C + c] = qkv[r * 3 * C + C + c];
      v[r * C + c] = qkv[r * 3 * C + 2 * C + c];
    }
}

Vec ref_linear_attention(const Vec& x, const Vec& wqkv, const Vec& qn, const Vec& kn, const Vec& wp, const Vec& bp,
                         int64_t B, int64_t N, int64_t C, int64_t H) {
  const int64_t d = C / H, rows = B * N;
  Vec q, k, v;
  ref_split_qkv(ref_linear(x, wqkv, {}, rows, C, 3 * C), rows, C, q, k, v);
  for (int64_t r = 0; r < rows; ++r)  // RMSNorm over all C, then ReLU
    for (auto [t, w] : {std::pair<Vec*, const Vec*>{&q, &qn}, {&k, &kn}}) {
      double ms = 0;
      for (int64_t c = 0; c < C; ++c) ms += (*t)[r * C + c] * (*t)[r * C + c];
      const double inv = 1.0 / std::sqrt(ms / static_cast<double>(C) + 1e-6);
      for (int64_t c = 0; c < C; ++c) (*t)[r * C + c] = std::max(0.0, (*t)[r * C + c] * inv * (*w)[c]);
    }
  Vec out(static_cast<size_t>(rows * C), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < N; ++t) {
        double den = 1e-6;
        for (int64_t s = 0; s < N; ++s) {
          double qk = 0;  // φ(q_t)·φ(k_s): the linear form, summed over s without ever normalising per key
          for (int64_t e = 0; e < d; ++e) qk += q[(b * N + t) * C + h * d + e] * k[(b * N + s) * C + h * d + e];
          den += qk;
          for (int64_t e = 0; e < d; ++e) out[(b * N + t) * C + h * d + e] += qk * v[(b * N + s) * C + h * d + e];
        }
        for (int64_t e = 0; e < d; ++e) out[(b * N + t) * C + h * d + e] /= den;
      }
  return wp.empty() ? out : ref_linear(out, wp, bp, rows, C, C);
}

// ---- helpers for the layer-level tests ----

constexpr int64_t kB = 2, kN = 17, kC = 8, kH = 2, kAgents = 4, kG = 4;  // brief: N=17, C=8, 2 heads, 4 agents

models::AgentOptions agent_opts(bool patches_only, int64_t agents = kAgents) {
  models::AgentOptions o;
  o.heads = kH;
  o.agent_num = agents;
  o.patches_only = patches_only;
  return o;
}

std::vector<Tensor> bias_tensors(uint64_t seed, int64_t n = kAgents, int64_t G = kG) {
  const double std = 0.3;  // larger than the 0.02 init so the biases visibly change the softmaxes
  return {randn_t({kH, n, 7, 7}, seed, std),        randn_t({kH, n, 7, 7}, seed + 1, std),
          randn_t({1, kH, n, G, 1}, seed + 2, std), randn_t({1, kH, n, 1, G}, seed + 3, std),
          randn_t({1, kH, G, 1, n}, seed + 4, std), randn_t({1, kH, 1, G, n}, seed + 5, std),
          randn_t({1, kH, n, 1}, seed + 6, std),    randn_t({1, kH, 1, n}, seed + 7, std)};
}

models::AgentBiases to_biases(const std::vector<Tensor>& t, size_t at) {
  return {t[at], t[at + 1], t[at + 2], t[at + 3], t[at + 4], t[at + 5], t[at + 6], t[at + 7]};
}

RefBiases to_ref(const models::AgentBiases& b) {
  return {b.an.to_vector(), b.na.to_vector(), b.ah.to_vector(), b.aw.to_vector(),
          b.ha.to_vector(), b.wa.to_vector(), b.ac.to_vector(), b.ca.to_vector()};
}

// ---- the bilinear resize of the an/na biases ----

TEST(AgentBias, BilinearResizeMatchesPyTorchOnRamps) {
  // F.interpolate(arange(7.), size=14, mode='linear', align_corners=False) and the 7 → 4 downscale.
  const Vec up = {0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4.25, 4.75, 5.25, 5.75, 6};
  const Vec down = {0.375, 2.125, 3.875, 5.625};
  for (auto [out, want] : {std::pair<int64_t, const Vec*>{14, &up}, {4, &down}}) {
    Tensor M = models::bilinear_resize_matrix(7, out, DType::f64);
    ASSERT_EQ(M.shape(), (Shape{out * out, 49}));
    Vec ramp_x(49), ramp_y(49);
    for (int y = 0; y < 7; ++y)
      for (int x = 0; x < 7; ++x) ramp_x[y * 7 + x] = x, ramp_y[y * 7 + x] = y;
    Vec rx = ops::matmul(M, Tensor::from_vector(ramp_x, {49, 1}, DType::f64)).to_vector();
    Vec ry = ops::matmul(M, Tensor::from_vector(ramp_y, {49, 1}, DType::f64)).to_vector();
    for (int64_t y = 0; y < out; ++y)
      for (int64_t x = 0; x < out; ++x) {
        EXPECT_NEAR(rx[y * out + x], (*want)[x], 1e-12) << out << " (" << y << "," << x << ")";
        EXPECT_NEAR(ry[y * out + x], (*want)[y], 1e-12) << out << " (" << y << "," << x << ")";
      }
  }
  Vec same = models::bilinear_resize_matrix(7, 7, DType::f64).to_vector();  // identity at equal size
  for (int i = 0; i < 49; ++i)
    for (int j = 0; j < 49; ++j) ASSERT_EQ(same[i * 49 + j], i == j ? 1.0 : 0.0);
}

// ---- forward against the references ----

TEST(AgentAttention, CoreMatchesBruteForce) {
  struct Case {
    int64_t N, agents;
    bool patches_only, with_bias;
  };
  // 4×4 grid → 2×2 agents (bins of 2); → 3×3 (overlapping bins); 5×5 grid → 2×2 (overlap [0,3) [2,5));
  // with biases the 7×7 an/na are resized down to 4×4 or up to 8×8.
  for (const Case& c : {Case{17, 4, false, false}, Case{17, 9, false, false}, Case{26, 4, false, false},
                        Case{17, 4, true, false}, Case{17, 4, true, true}, Case{17, 9, true, true},
                        Case{65, 4, true, true}}) {  // 8×8 grid: the 7×7 biases are upsampled
    const uint64_t seed = 10 * c.N + c.agents + c.patches_only + 2 * c.with_bias;
    Tensor q = randn_t({kB, c.N, kC}, seed), k = randn_t({kB, c.N, kC}, seed + 1), v = randn_t({kB, c.N, kC}, seed + 2);
    std::vector<Tensor> bt = bias_tensors(seed + 3, c.agents, std::lround(std::sqrt(c.N - 1.0)));
    models::AgentBiases bias = to_biases(bt, 0);
    RefBiases rb = to_ref(bias);
    const auto o = agent_opts(c.patches_only, c.agents);
    Vec got = models::agent_core(q, k, v, o, c.with_bias ? &bias : nullptr).to_vector();
    Vec want = ref_agent_core(q.to_vector(), k.to_vector(), v.to_vector(), kB, c.N, kC, kH, c.agents, c.patches_only,
                              c.with_bias ? &rb : nullptr);
    expect_close(got, want, 1e-12, "N=" + std::to_string(c.N) + " agents=" + std::to_string(c.agents));
  }
}

TEST(AgentAttention, PoolingShiftMatters) {
  // Shifted (CLS in, last patch out) and patch-only pooling must differ: guards against a silently ignored flag.
  Tensor q = randn_t({1, kN, kC}, 5);
  Vec a = models::agent_tokens(q, 4, false).to_vector(), b = models::agent_tokens(q, 4, true).to_vector();
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
  EXPECT_GT(diff, 1e-3);
  // Agent 0 of the shifted pooling averages tokens 0, 1, 4, 5 (CLS at grid cell (0,0)).
  Vec qv = q.to_vector();
  for (int64_t c = 0; c < kC; ++c)
    EXPECT_NEAR(a[c], (qv[0 * kC + c] + qv[1 * kC + c] + qv[4 * kC + c] + qv[5 * kC + c]) / 4, 1e-14);
}

TEST(AgentAttention, ModuleForwardMatchesReferenceWithItsWeights) {
  // Built by make_attention, so this also checks its wiring: agent pools shifted, agent_bias the patches.
  for (bool with_bias : {false, true}) {
    Generator gen(3);
    models::AttentionConfig cfg;
    cfg.type = with_bias ? "agent_bias" : "agent";
    cfg.agent_num = kAgents;
    auto made = std::dynamic_pointer_cast<models::AgentAttention>(models::make_attention(cfg, kC, kH, 0.0, gen, kN));
    ASSERT_TRUE(made);
    models::AgentAttention& layer = *made;
    layer.eval();
    Tensor x = randn_t({kB, kN, kC}, 40, 1.0, DType::f32);
    Vec got = layer.forward(x).to_vector();
    const int64_t rows = kB * kN;
    Vec q, k, v;
    ref_split_qkv(
        ref_linear(x.to_vector(), layer.qkv->weight.to_vector(), layer.qkv->bias.to_vector(), rows, kC, 3 * kC), rows,
        kC, q, k, v);
    RefBiases rb = with_bias ? to_ref(layer.bias) : RefBiases{};
    Vec o = ref_agent_core(q, k, v, kB, kN, kC, kH, kAgents, with_bias, with_bias ? &rb : nullptr);
    Vec want = ref_linear(o, layer.proj->weight.to_vector(), layer.proj->bias.to_vector(), rows, kC, kC);
    expect_close(got, want, 2e-5, with_bias ? "agent_bias" : "agent");
  }
}

TEST(LinearAttention, MatchesBruteForce) {
  for (int64_t heads : {1, 2}) {
    Tensor x = randn_t({kB, kN, kC}, 50), wqkv = randn_t({3 * kC, kC}, 51, 0.4);
    Tensor qn = randn_t({kC}, 52, 0.5) + 1.0, kn = randn_t({kC}, 53, 0.5) + 1.0;
    Tensor wp = randn_t({kC, kC}, 54, 0.3), bp = randn_t({kC}, 55, 0.1);
    Vec got = models::linear_attention(x, wqkv, Tensor(), qn, kn, wp, bp, heads).to_vector();
    Vec want = ref_linear_attention(x.to_vector(), wqkv.to_vector(), qn.to_vector(), kn.to_vector(), wp.to_vector(),
                                    bp.to_vector(), kB, kN, kC, heads);
    expect_close(got, want, 1e-11, "heads=" + std::to_string(heads));
  }
  // The module (f32) runs the same function with its own weights.
  Generator gen(4);
  models::LinearAttention layer(kC, kH, 0.0, gen);
  Tensor x = randn_t({kB, kN, kC}, 56, 1.0, DType::f32);
  Vec want = ref_linear_attention(x.to_vector(), layer.qkv->weight.to_vector(), layer.q_norm_weight.to_vector(),
                                  layer.k_norm_weight.to_vector(), layer.proj->weight.to_vector(),
                                  layer.proj->bias.to_vector(), kB, kN, kC, kH);
  expect_close(layer.forward(x).to_vector(), want, 2e-5, "module");
}

// The official core runs with autocast off on f32 copies of its inputs: given bf16 φ(Q), φ(K), V the core returns
// f32, equal to the core on the same values held in f32 (a bf16 core would round every product and sum). The CUDA
// side, under autocast: tests/cuda/test_attention_kinds_cuda.cpp.
TEST(LinearAttention, CoreRunsInF32OnBf16Inputs) {
  const Shape s{kB, kH, kN, kC / kH};
  const Tensor q = ops::relu(randn_t(s, 60, 1.0, DType::f32)).to(DType::bf16);
  const Tensor k = ops::relu(randn_t(s, 61, 1.0, DType::f32)).to(DType::bf16);
  const Tensor v = randn_t(s, 62, 1.0, DType::f32).to(DType::bf16);
  const Tensor got = models::linear_attention_core(q, k, v);
  EXPECT_EQ(got.dtype(), DType::f32);
  const Tensor want = models::linear_attention_core(q.to(DType::f32), k.to(DType::f32), v.to(DType::f32));
  EXPECT_EQ(got.to_vector(), want.to_vector());
}

TEST(LinearAttention, ReluMasksNegativesAndTheirGradient) {
  Tensor x = Tensor::from_vector({-2, -0.5, 0, 0.5, 3}, {5}, DType::f64).set_requires_grad(true);
  Tensor y = ops::relu(x);
  EXPECT_EQ(y.to_vector(), (Vec{0, 0, 0, 0.5, 3}));
  ops::sum(y * Tensor::from_vector({1, 2, 3, 4, 5}, {5}, DType::f64)).backward();
  EXPECT_EQ(x.grad().to_vector(), (Vec{0, 0, 0, 4, 5}));
}

// ---- gradchecks of the whole layers in f64: inputs (x, qkv W/b, proj W/b[, biases]) ----

void gradcheck_agent(bool with_bias, uint64_t seed) {
  std::vector<Tensor> in = {randn_t({kB, kN, kC}, seed), randn_t({3 * kC, kC}, seed + 1, 0.4),
                            randn_t({3 * kC}, seed + 2, 0.1), randn_t({kC, kC}, seed + 3, 0.4),
                            randn_t({kC}, seed + 4, 0.1)};
  if (with_bias)
    for (auto& t : bias_tensors(seed + 5)) in.push_back(t);
  auto fn = [&](const std::vector<Tensor>& t) {
    models::AgentBiases b = with_bias ? to_biases(t, 5) : models::AgentBiases{};
    return models::agent_attention(t[0], t[1], t[2], t[3], t[4], agent_opts(with_bias), with_bias ? &b : nullptr);
  };
  GradcheckResult r = gradcheck(fn, in);
  EXPECT_TRUE(r.ok) << r.detail << " (max abs err " << r.max_abs_err << ")";
}

TEST(AgentAttentionGrad, Minus) { gradcheck_agent(false, 60); }
TEST(AgentAttentionGrad, WithBiases) { gradcheck_agent(true, 70); }

TEST(LinearAttentionGrad, WholeLayer) {
  std::vector<Tensor> in = {randn_t({kB, kN, kC}, 80),    randn_t({3 * kC, kC}, 81, 0.4), randn_t({kC}, 82, 0.3) + 1.0,
                            randn_t({kC}, 83, 0.3) + 1.0, randn_t({kC, kC}, 84, 0.4),     randn_t({kC}, 85, 0.1)};
  auto fn = [](const std::vector<Tensor>& t) {
    return models::linear_attention(t[0], t[1], Tensor(), t[2], t[3], t[4], t[5], kH);
  };
  GradcheckResult r = gradcheck(fn, in);
  EXPECT_TRUE(r.ok) << r.detail << " (max abs err " << r.max_abs_err << ")";
}

// ---- parameters ----

std::map<std::string, Shape> shapes_of(const nn::Module& m) {
  std::map<std::string, Shape> s;
  for (const auto& [name, t] : m.state_dict()) s[name] = t.shape();
  return s;
}

TEST(AgentAttention, BiasParameterNamesShapesAndInit) {
  Generator gen(7);
  models::AgentAttention layer(kC, agent_opts(true), kG, 0.0, gen);
  const std::map<std::string, Shape> want = {{"an_bias", {kH, kAgents, 7, 7}},
                                             {"na_bias", {kH, kAgents, 7, 7}},
                                             {"ah_bias", {1, kH, kAgents, kG, 1}},
                                             {"aw_bias", {1, kH, kAgents, 1, kG}},
                                             {"ha_bias", {1, kH, kG, 1, kAgents}},
                                             {"wa_bias", {1, kH, 1, kG, kAgents}},
                                             {"ac_bias", {1, kH, kAgents, 1}},
                                             {"ca_bias", {1, kH, 1, kAgents}},
                                             {"qkv.weight", {3 * kC, kC}},
                                             {"qkv.bias", {3 * kC}},
                                             {"proj.weight", {kC, kC}},
                                             {"proj.bias", {kC}}};
  EXPECT_EQ(shapes_of(layer), want);
  // Biases: trunc_normal(0.02). qkv/proj: PyTorch's default U(±1/√C), weights and biases.
  Vec an = layer.bias.an.to_vector();
  double ss = 0;
  for (double v : an) ss += v * v;
  EXPECT_NEAR(std::sqrt(ss / static_cast<double>(an.size())), 0.02, 0.004);
  const double bound = 1.0 / std::sqrt(static_cast<double>(kC));
  for (const Tensor* t : {&layer.qkv->weight, &layer.qkv->bias, &layer.proj->weight}) {
    double mx = 0;
    for (double v : t->to_vector()) mx = std::max(mx, std::abs(v));
    EXPECT_LE(mx, bound);
    EXPECT_GT(mx, 0.6 * bound);
  }
  // Without biases: just qkv and proj, like dense attention.
  models::AgentAttention minus(kC, agent_opts(false), 0, 0.0, gen);
  EXPECT_EQ(shapes_of(minus).size(), 4u);
  // A wrong token count is an error naming the sizes.
  expect_error([&] { layer.forward(Tensor::zeros({1, 26, kC})); }, "N = 17");
}

TEST(LinearAttention, ParameterNames) {
  Generator gen(8);
  const std::map<std::string, Shape> want = {{"qkv.weight", {3 * kC, kC}},
                                             {"q_norm.weight", {kC}},
                                             {"k_norm.weight", {kC}},
                                             {"proj.weight", {kC, kC}},
                                             {"proj.bias", {kC}}};
  EXPECT_EQ(shapes_of(models::LinearAttention(kC, kH, 0.0, gen)), want);
  // One head: the official module has no output projection (to_out = Identity).
  EXPECT_EQ(shapes_of(models::LinearAttention(kC, 1, 0.0, gen)).size(), 3u);
}

// ---- make_attention: dispatch, errors, the ViT with each kind ----

TEST(MakeAttention, DispatchesEveryKind) {
  Generator gen(9);
  models::AttentionConfig cfg;
  auto make = [&](const std::string& type) {
    cfg.type = type;
    cfg.m = 4;
    cfg.agent_num = 4;
    return models::make_attention(cfg, kC, kH, 0.0, gen, kN);
  };
  EXPECT_TRUE(std::dynamic_pointer_cast<models::DenseAttention>(make("dense")));
  EXPECT_TRUE(std::dynamic_pointer_cast<models::MitaAttention>(make("mita")));
  EXPECT_TRUE(std::dynamic_pointer_cast<models::MitaAttention>(make("mita_route")));
  EXPECT_TRUE(std::dynamic_pointer_cast<models::AgentAttention>(make("agent")));
  EXPECT_TRUE(std::dynamic_pointer_cast<models::LinearAttention>(make("linear")));
  auto ab = make("agent_bias");
  ASSERT_TRUE(std::dynamic_pointer_cast<models::AgentAttention>(ab));
  EXPECT_TRUE(shapes_of(*ab).count("an_bias"));
}

TEST(MakeAttention, ErrorsNameTheKey) {
  Generator gen(10);
  auto make = [&](models::AttentionConfig c, int64_t N) { models::make_attention(c, kC, kH, 0.0, gen, N); };
  models::AttentionConfig c;
  c.type = "sparse";
  expect_error([&] { make(c, kN); }, "model.attention.type");
  expect_error([&] { make(c, 0); }, "model.attention.type");
  c = {};
  c.type = "mita", c.m = 5;  // 4×4 grid pooled 2-D: m must be p²
  expect_error([&] { make(c, kN); }, "model.attention.m");
  c.m = 4, c.k = 18;  // k > N
  expect_error([&] { make(c, kN); }, "model.attention.k");
  c.k = 0, c.m = 25;  // default k = m = 25 > 17
  expect_error([&] { make(c, kN); }, "model.attention.k");
  c.type = "mita_route", c.m = 9;  // default k = 2m = 18 > 17
  expect_error([&] { make(c, kN); }, "model.attention.k");
  c.type = "mita", c.m = 4, c.dwc = true;  // 12 patch tokens: no square grid for the DWC
  expect_error([&] { make(c, 13); }, "model.attention.dwc");
  c = {};
  c.type = "agent", c.agent_num = 5;
  expect_error([&] { make(c, kN); }, "model.attention.agent_num");
  c.agent_num = 4;
  expect_error([&] { make(c, 13); }, "model.attention.type");
  c.type = "agent_bias";
  expect_error([&] { make(c, 0); }, "agent_bias");
  // The ViT reports them when it is built: vit_micro has N = 17 and mita's defaults (m = k = 25) do not fit.
  models::ViTConfig v = models::preset("vit_micro");
  v.embed_dim = kC, v.depth = 1, v.num_heads = kH;
  v.attention.type = "mita";
  expect_error([&] { models::VisionTransformer m(v); }, "model.attention.k");
  v.attention.m = 6, v.attention.k = 6;
  expect_error([&] { models::VisionTransformer m(v); }, "model.attention.m");
}

TEST(MakeAttention, ViTWithEachBaselineTrainsEveryParameter) {
  for (const char* type : {"agent", "agent_bias", "linear"}) {
    models::ViTConfig v = models::preset("vit_micro");
    v.embed_dim = 12, v.depth = 2, v.num_heads = 3;
    v.attention.type = type;
    v.attention.agent_num = 4;
    models::VisionTransformer m(v);
    Tensor x = randn_t({2, 1, 28, 28}, 90, 1.0, DType::f32);
    Tensor logits = m.forward(x);
    ASSERT_EQ(logits.shape(), (Shape{2, 10})) << type;
    ops::cross_entropy(logits, Tensor::from_vector({1, 7}, {2}, DType::i64)).backward();
    for (const auto& [name, p] : m.named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << type << " " << name;
      // Only the CLS row of the last block reaches the head, and na/ha/wa bias the patch tokens' rows only.
      if (name.rfind("blocks.1.attn.", 0) == 0 &&
          (name.find("na_bias") != std::string::npos || name.find("ha_bias") != std::string::npos ||
           name.find("wa_bias") != std::string::npos))
        continue;
      double s = 0;
      for (double g : p.grad().to_vector()) s += std::abs(g);
      EXPECT_GT(s, 0) << type << " " << name;
    }
  }
}

}  // namespace
}  // namespace vt::test
