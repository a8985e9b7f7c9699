// The fused MiTA kernels on the GPU against the CPU (issue 5's shapes: N = 197 with m = k = 25, 1025 and 1601
// with m = k = 49, a 1-D N = 4096 with m = k = 64; B = 2, 2 heads of 64).
//
// Routing: the GPU's f32 scores differ from the CPU's f64 ones in the last bits, so a near-tie may pick another
// key; the test checks what must hold for any correct top-k/arg-max: every chosen key scores at least as high as
// every key left out (within the f32 error of a length-64 dot product, 1e-5·max|score|), the chosen expert is a
// maximum, and the grouping is consistent. With integer inputs (exact scores) the choices, ties included, must
// equal the CPU's bit for bit.
// Joint attention: the GPU op with the GPU's routing against the CPU op in f64 with the same routing, forward and
// all five gradients. f32: the kernels use exp2f and f32 sums over ≤ 128 slots (relative error ~1e-6); we allow
// 2e-5·max|ref|. bf16: the rule of issue 4 against the f64 reference rounded to bf16 (the plainest bf16 answer).
// Deterministic mode must repeat its bits; the default (atomics) must agree with it to f32 rounding.
// Model: a MiTA-DeiT-T forward/backward (also +DWC, +DWC+gate) on the GPU equals the CPU model with the same weights;
// the CPU run's routing is replayed on the GPU (models::MitaRoutingTap) so both make the same discrete choices.
// Packed-qkv training path: forward and d(qkv) against the CPU in f64 with the GPU's routing replayed; bf16 within
// the bf16 rule with the three-slice path as the plain answer.
#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <iterator>

#include "cuda/device_test_util.h"
#include "models/mita.h"
#include "models/registry.h"
#include "models/vit.h"
#include "autograd/node.h"
#include "kernels/cuda/mita/mita_shared.h"
#include "kernels/cuda/mita/mita_small.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

struct Case {
  int64_t N, m, k;
  const char* pool;
};
const Case kCases[] = {
    {197, 25, 25, "shifted"}, {1025, 49, 49, "shifted"}, {1601, 49, 49, "shifted"}, {4096, 64, 64, "sequence"}};
constexpr int64_t kB = 2, kH = 2, kD = 64, kC = kH * kD;

std::string name_of(const Case& c, DType dt) {
  return "N=" + std::to_string(c.N) + " m=" + std::to_string(c.m) + " k=" + std::to_string(c.k) + " " + dtype_name(dt);
}

Tensor heads_of(const Tensor& x, int64_t H = kH) {  // [B, N, C] → [B, H, N, d]
  return x.reshape({x.size(0), x.size(1), H, x.size(2) / H}).permute({0, 2, 1, 3});
}

std::vector<int32_t> ints(const Tensor& t) {
  Tensor c = t.to(cpu()).contiguous();
  return std::vector<int32_t>(c.data<int32_t>(), c.data<int32_t>() + c.numel());
}

/// The four routing arrays of `got` equal those of `want`, element for element.
void expect_same_routing(const ops::MitaRouting& got, const ops::MitaRouting& want, const std::string& what) {
  EXPECT_EQ(ints(got.expert_keys), ints(want.expert_keys)) << what;
  EXPECT_EQ(ints(got.experts), ints(want.experts)) << what;
  EXPECT_EQ(ints(got.order), ints(want.order)) << what;
  EXPECT_EQ(ints(got.offsets), ints(want.offsets)) << what;
}

ops::MitaRouting on_cpu(const ops::MitaRouting& r) {
  return {r.expert_keys.to(cpu()), r.experts.to(cpu()), r.order.to(cpu()), r.offsets.to(cpu())};
}

/// q, k [B, H, N, d] and pooled landmarks [B, H, m, d] as CPU tensors of dtype (values representable in it).
struct Operands {
  Tensor q, k, v, r, vh;
};
Operands operands(const Case& c, DType dt, uint32_t seed, int64_t H = kH, int64_t D = kD) {
  models::MitaOptions o;
  o.heads = H, o.m = c.m, o.k = c.k, o.landmark_pool = c.pool;
  Operands x;
  Tensor q = randn_cpu({kB, c.N, H * D}, seed, dt);
  x.q = heads_of(q, H);
  x.k = heads_of(randn_cpu({kB, c.N, H * D}, seed + 1, dt), H);
  x.v = heads_of(randn_cpu({kB, c.N, H * D}, seed + 2, dt), H);
  x.r = heads_of(models::mita_landmarks(q.to(DType::f32), o).to(dt), H);
  x.vh = randn_cpu({kB, H, c.m, D}, seed + 3, dt);
  return x;
}

/// f64 scores a [rows, d] · b [cols, d]ᵀ of one (b, h).
std::vector<double> scores(const Tensor& a, const Tensor& b, int64_t bi, int64_t h) {
  Tensor x = a.slice(0, bi, bi + 1).slice(1, h, h + 1).to(DType::f64).contiguous();
  Tensor y = b.slice(0, bi, bi + 1).slice(1, h, h + 1).to(DType::f64).contiguous();
  const int64_t R = x.size(2), Cn = y.size(2);
  const double *px = x.data<double>(), *py = y.data<double>();
  std::vector<double> s(R * Cn);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < Cn; ++j) {
      double acc = 0;
      for (int64_t c = 0; c < kD; ++c) acc += px[i * kD + c] * py[j * kD + c];
      s[i * Cn + j] = acc;
    }
  return s;
}

void check_routing_valid(const Operands& x, const ops::MitaRouting& gpu, const Case& c, const std::string& what) {
  const auto keys = ints(gpu.expert_keys), experts = ints(gpu.experts), order = ints(gpu.order),
             offsets = ints(gpu.offsets);
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t h = 0; h < kH; ++h) {
      const int64_t bh = b * kH + h;
      const auto s = scores(x.r, x.k, b, h), g = scores(x.r, x.q, b, h);
      double scale = 0;
      for (double v : s) scale = std::max(scale, std::abs(v));
      const double tol = 1e-5 * scale;
      for (int64_t j = 0; j < c.m; ++j) {
        std::vector<char> chosen(c.N, 0);
        double min_in = INFINITY, max_out = -INFINITY;
        for (int64_t i = 0; i < c.k; ++i) {
          const int32_t n = keys[(bh * c.m + j) * c.k + i];
          ASSERT_TRUE(n >= 0 && n < c.N) << what;
          if (i > 0) {
            ASSERT_LT(keys[(bh * c.m + j) * c.k + i - 1], n) << what << ": keys ascend, no repeats";
          }
          chosen[n] = 1;
          min_in = std::min(min_in, s[j * c.N + n]);
        }
        for (int64_t n = 0; n < c.N; ++n)
          if (!chosen[n]) max_out = std::max(max_out, s[j * c.N + n]);
        EXPECT_GE(min_in, max_out - tol) << what << " expert " << j << " of (b, h) " << bh;
      }
      for (int64_t n = 0; n < c.N; ++n) {
        const int32_t e = experts[bh * c.N + n];
        double best = -INFINITY;
        for (int64_t j = 0; j < c.m; ++j) best = std::max(best, g[j * c.N + n]);
        EXPECT_GE(g[e * c.N + n], best - tol) << what << " query " << n;
      }
      const int32_t* off = &offsets[bh * (c.m + 1)];
      ASSERT_EQ(off[0], 0);
      ASSERT_EQ(off[c.m], c.N);
      for (int64_t j = 0; j < c.m; ++j)
        for (int32_t t = off[j]; t < off[j + 1]; ++t) {
          ASSERT_EQ(experts[bh * c.N + order[bh * c.N + t]], j) << what;
          if (t > off[j]) {
            ASSERT_LT(order[bh * c.N + t - 1], order[bh * c.N + t]) << what;
          }
        }
    }
}

TEST(MitaCuda, RoutingIsAValidTopKAndArgmaxAndGroupsQueries) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 10;
  for (const Case& c : kCases)
    for (DType dt : {DType::f32, DType::bf16}) {
      const Operands x = operands(c, dt, seed += 10);
      const ops::MitaRouting r = ops::mita_route(x.q.to(kGpu), x.k.to(kGpu), x.r.to(kGpu), c.k);
      check_routing_valid(x, r, c, name_of(c, dt));
    }
}

// The one-CTA core (kernels/cuda/mita/mita_small.h, which the packed training path takes on short sequences) routes as
// mita_route must: a valid top-k, arg-max and grouping of its own scores, at DeiT's shape and two smaller ones (a
// 7×7 grid; a 1-D sequence with k > m). Its outputs and gradients meet the CPU in the packed-path tests below.
TEST(MitaCuda, OneCtaCoreRoutesAsMitaRoute) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 1700;
  for (const Case& c : {kCases[0], Case{50, 9, 16, "shifted"}, Case{128, 16, 32, "sequence"}}) {
    const std::string what = name_of(c, DType::bf16) + " one-CTA core";
    kernels::MitaShape shape{kB, kH, c.N, c.m, c.k, kD, 0.125f, 1.0f / kD, true};
    ASSERT_TRUE(kernels::cuda::mita_small_supported(shape)) << what;
    models::MitaOptions o;
    o.heads = kH, o.m = c.m, o.k = c.k, o.landmark_pool = c.pool;
    Tensor qkv = randn_cpu({kB, c.N, 3 * kC}, seed += 10, DType::bf16).to(kGpu).detach();
    qkv.set_requires_grad(true);
    models::MitaRoutingTap tap(models::MitaRoutingTap::Mode::record);
    ASSERT_TRUE(models::mita_core_packed(qkv, o).defined()) << what;
    ASSERT_EQ(tap.routings.size(), 1u) << what;
    const Tensor q = qkv.detach().slice(2, 0, kC);
    Operands x;
    x.q = heads_of(q.to(cpu()));
    x.k = heads_of(qkv.detach().slice(2, kC, 2 * kC).to(cpu()));
    x.r = heads_of(models::mita_landmarks(q, o).to(cpu()));
    check_routing_valid(x, tap.routings[0], c, what);
  }
}

// The one-CTA core's top-k (value-space probes, then a bit search where they do not settle it) and arg-max give the
// CPU's routing bit for bit when every score is exact in f32: q, k, v small integers (many exact ties, zeros
// among them) or ternary (ties everywhere), at N = 197 and 50 (8 scores a lane) and N = 300 (16 a lane).
TEST(MitaCuda, OneCtaCoreRoutingOnExactScoresEqualsTheCpu) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 1900;
  for (const Case& c : {kCases[0], Case{50, 9, 16, "shifted"}, Case{300, 16, 32, "sequence"}})
    for (const double step : {1.5, 0.0}) {  // round(1.5·x) clamped to [-4, 4], or the sign of x past ±0.6
      const std::string what = name_of(c, DType::bf16) + (step > 0 ? " integers" : " ternary");
      ASSERT_TRUE(
          kernels::cuda::mita_small_supported(kernels::MitaShape{kB, kH, c.N, c.m, c.k, kD, 0.125f, 1.0f / kD, true}))
          << what;
      const Shape shape{kB, c.N, 3 * kC};
      std::vector<double> v = randn_cpu(shape, seed += 10, DType::f64).to_vector();
      for (double& e : v)
        e = step > 0 ? std::clamp(std::round(step * e), -4.0, 4.0) : (e > 0.6 ? 1.0 : (e < -0.6 ? -1.0 : 0.0));
      Tensor qkv = Tensor::from_vector(v, shape, DType::f32).to(DType::bf16).to(kGpu).detach();
      qkv.set_requires_grad(true);
      models::MitaOptions o;
      o.heads = kH, o.m = c.m, o.k = c.k, o.landmark_pool = c.pool;
      models::MitaRoutingTap tap(models::MitaRoutingTap::Mode::record);
      ASSERT_TRUE(models::mita_core_packed(qkv, o).defined()) << what;
      ASSERT_EQ(tap.routings.size(), 1u) << what;
      const Tensor q = qkv.detach().slice(2, 0, kC);
      const Tensor q_cpu = heads_of(q.to(cpu()).to(DType::f32));
      const Tensor k_cpu = heads_of(qkv.detach().slice(2, kC, 2 * kC).to(cpu()).to(DType::f32));
      const Tensor r_cpu = heads_of(models::mita_landmarks(q, o).to(cpu()).to(DType::f32));
      expect_same_routing(tap.routings[0], ops::mita_route(q_cpu, k_cpu, r_cpu, c.k), what);
    }
}

TEST(MitaCuda, RoutingWithExactTiesEqualsTheCpuBitForBit) {
  VT_REQUIRE_DEVICE();
  // Entries in {-1, 0, 1}: the scores are small integers, exact in f32, with many ties (lower index first).
  for (const Case& c : kCases) {
    auto ternary = [&](const Shape& s, uint32_t seed) {
      Tensor t = randn_cpu(s, seed, DType::f64);
      std::vector<double> v = t.to_vector();
      for (double& e : v) e = e > 0.6 ? 1.0 : (e < -0.6 ? -1.0 : 0.0);
      return Tensor::from_vector(v, s, DType::f32);
    };
    Tensor q = ternary({kB, kH, c.N, kD}, 1), k = ternary({kB, kH, c.N, kD}, 2), r = ternary({kB, kH, c.m, kD}, 3);
    const ops::MitaRouting cpu_r = ops::mita_route(q, k, r, c.k);
    const ops::MitaRouting gpu_r = ops::mita_route(q.to(kGpu), k.to(kGpu), r.to(kGpu), c.k);
    expect_same_routing(gpu_r, cpu_r, name_of(c, DType::f32));
  }
}

// The top-k's exact path: k above its fast-path limit (2048), and a boundary bin of more than 8192 tied scores.
TEST(MitaCuda, RoutingExactTopKPathsEqualTheCpu) {
  VT_REQUIRE_DEVICE();
  struct Big {
    int64_t N, m, k;
    bool ties;
  };
  for (const Big& c : {Big{5000, 2, 3000, false}, Big{20000, 2, 100, true}}) {
    Tensor q = randn_cpu({1, 1, c.N, 32}, 1), k = randn_cpu({1, 1, c.N, 32}, 2), r = randn_cpu({1, 1, c.m, 32}, 3);
    if (c.ties) k = Tensor::full({1, 1, c.N, 32}, 0.5, DType::f32);  // every score of a landmark is equal
    const ops::MitaRouting cpu_r = ops::mita_route(q, k, r, c.k);
    const ops::MitaRouting gpu_r = ops::mita_route(q.to(kGpu), k.to(kGpu), r.to(kGpu), c.k);
    if (c.ties) {
      EXPECT_EQ(ints(gpu_r.expert_keys), ints(cpu_r.expert_keys)) << "N=" << c.N;
    } else {  // distinct random scores: the same sets, up to a flip at a near-tie
      const std::vector<int32_t> a = ints(gpu_r.expert_keys), b = ints(cpu_r.expert_keys);
      for (int64_t j = 0; j < c.m; ++j) {
        std::vector<int32_t> both;
        std::set_intersection(a.begin() + j * c.k, a.begin() + (j + 1) * c.k, b.begin() + j * c.k,
                              b.begin() + (j + 1) * c.k, std::back_inserter(both));
        EXPECT_GE(static_cast<int64_t>(both.size()), c.k - 2) << "k=" << c.k << " landmark " << j;
      }
    }
  }
}

// Long-sequence inference: routing and V̂ in one pass (candidates collected by the V̂ kernel), N ≥ 128K.
TEST(MitaCuda, OnePassInferenceRoutingAndValuesMatchTheCpu) {
  VT_REQUIRE_DEVICE();
  const Case c{131072, 32, 32, "sequence"};
  const Operands x = operands(c, DType::bf16, 900);
  NoGradGuard no_grad;
  ops::MitaRouting routing;
  Tensor v_hat;
  ASSERT_TRUE(
      ops::mita_route_with_values(x.q.to(kGpu), x.k.to(kGpu), x.v.to(kGpu), x.r.to(kGpu), c.k, 0.125, routing, v_hat));
  check_routing_valid(x, routing, c, "one-pass N=131072");
  const Tensor ref = ops::mita_shared_values(x.r.to(DType::f64), x.k.to(DType::f64), x.v.to(DType::f64), 0.125);
  expect_bf16_rule(v_hat, ref.to(DType::bf16), ref, "one-pass V̂");
  // Equal scores everywhere: every key is a candidate, the lists overflow, and the exact fallback (scores
  // recomputed) must keep the lowest indices, as the CPU does.
  Tensor flat = Tensor::full({kB, kH, c.N, kD}, 0.5, DType::bf16);
  ASSERT_TRUE(
      ops::mita_route_with_values(x.q.to(kGpu), flat.to(kGpu), x.v.to(kGpu), x.r.to(kGpu), c.k, 0.125, routing, v_hat));
  const ops::MitaRouting cpu_r = ops::mita_route(x.q.to(DType::f32), flat.to(DType::f32), x.r.to(DType::f32), c.k);
  EXPECT_EQ(ints(routing.expert_keys), ints(cpu_r.expert_keys));
}

struct Result {
  Tensor out;
  std::vector<Tensor> grads;  // q, k, v, r, v_hat (k, v, q only when route-only)
};

Result run_attention(const Operands& x, const ops::MitaRouting& routing, const ops::MitaAttentionOptions& o,
                     const Tensor& dout, Device dev, DType dt) {
  std::vector<Tensor> in{x.q, x.k, x.v, x.r, x.vh};
  for (Tensor& t : in) {
    t = t.to(dt).to(dev).detach();
    t.set_requires_grad(true);
  }
  Result res;
  const ops::MitaRouting rt = dev.is_cuda() ? routing : on_cpu(routing);
  res.out = ops::mita_attention(in[0], in[1], in[2], in[3], in[4], rt, o);
  res.out.backward(dout.to(dt).to(dev));
  for (int i = 0; i < (o.shared ? 5 : 3); ++i) res.grads.push_back(in[i].grad());
  return res;
}

void compare(const Result& gpu, const Result& ref, DType dt, const std::string& what) {
  const char* names[] = {"dq", "dk", "dv", "dlandmarks", "dv_hat"};
  auto check = [&](const Tensor& ours, const Tensor& r64, const std::string& label) {
    if (dt == DType::f32) {
      EXPECT_LE(max_abs_diff(ours, r64), 2e-5 * max_abs(r64) + 1e-9) << what << " " << label;
    } else {
      expect_bf16_rule(ours, r64.to(DType::bf16), r64, (what + " " + label).c_str());
    }
  };
  check(gpu.out, ref.out, "out");
  for (size_t i = 0; i < ref.grads.size(); ++i) check(gpu.grads[i], ref.grads[i], names[i]);
}

TEST(MitaCuda, JointAttentionForwardAndGradientsMatchTheCpu) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 100;
  for (const Case& c : kCases)
    for (DType dt : {DType::f32, DType::bf16})
      for (bool shared : {true, false}) {
        const std::string what = name_of(c, dt) + (shared ? "" : " route-only");
        const Operands x = operands(c, dt, seed += 10);
        const ops::MitaRouting routing = ops::mita_route(x.q.to(kGpu), x.k.to(kGpu), x.r.to(kGpu), c.k);
        ops::MitaAttentionOptions o;
        o.scale = 1.0 / 8.0, o.shared_scale = 1.0 / 64.0, o.shared = shared;
        const Tensor dout = randn_cpu({kB, kH, c.N, kD}, seed + 5, dt);
        const Result ref = run_attention(x, routing, o, dout, cpu(), DType::f64);
        for (bool det : {false, true}) {
          o.deterministic = det;
          compare(run_attention(x, routing, o, dout, kGpu, dt), ref, dt, what + (det ? " deterministic" : ""));
        }
      }
}

// Head dim 16 has no tensor-core kernel: the bf16 operands take the CUDA-core forward (f32 takes it always).
TEST(MitaCuda, JointAttentionCudaCoreForwardAtHeadDim16) {
  VT_REQUIRE_DEVICE();
  const Case c{197, 25, 25, "shifted"};
  const int64_t H = 8, D = 16;
  const Operands x = operands(c, DType::bf16, 500, H, D);
  const ops::MitaRouting routing = ops::mita_route(x.q.to(kGpu), x.k.to(kGpu), x.r.to(kGpu), c.k);
  ops::MitaAttentionOptions o;
  o.scale = 0.25, o.shared_scale = 1.0 / 16.0;
  const Tensor dout = randn_cpu({kB, H, c.N, D}, 501, DType::bf16);
  compare(run_attention(x, routing, o, dout, kGpu, DType::bf16), run_attention(x, routing, o, dout, cpu(), DType::f64),
          DType::bf16, "d=16");
}

// V̂ without gradients: the split-key tensor-core kernel against the f64 composite (also a long N, many slices).
TEST(MitaCuda, SharedValuesKernelMatchesTheCpu) {
  VT_REQUIRE_DEVICE();
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.push_back({20000, 96, 96, "sequence"});
  uint32_t seed = 700;
  for (const Case& c : cases) {
    const Operands x = operands(c, DType::bf16, seed += 10);
    NoGradGuard no_grad;
    const Tensor ours = ops::mita_shared_values(x.r.to(kGpu), x.k.to(kGpu), x.v.to(kGpu), 0.125);
    const Tensor ref = ops::mita_shared_values(x.r.to(DType::f64), x.k.to(DType::f64), x.v.to(DType::f64), 0.125);
    expect_bf16_rule(ours, ref.to(DType::bf16), ref, name_of(c, DType::bf16).c_str());
  }
}

TEST(MitaCuda, DeterministicBackwardRepeatsItsBits) {
  VT_REQUIRE_DEVICE();
  for (const Case& c : kCases)
    for (DType dt : {DType::f32, DType::bf16}) {
      const Operands x = operands(c, dt, 7);
      const ops::MitaRouting routing = ops::mita_route(x.q.to(kGpu), x.k.to(kGpu), x.r.to(kGpu), c.k);
      ops::MitaAttentionOptions o;
      o.scale = 1.0 / 8.0, o.shared_scale = 1.0 / 64.0, o.deterministic = true;
      const Tensor dout = randn_cpu({kB, kH, c.N, kD}, 9, dt);
      const Result a = run_attention(x, routing, o, dout, kGpu, dt), b = run_attention(x, routing, o, dout, kGpu, dt);
      for (size_t i = 0; i < a.grads.size(); ++i) {
        Tensor ga = a.grads[i].to(cpu()).contiguous(), gb = b.grads[i].to(cpu()).contiguous();
        EXPECT_EQ(std::memcmp(ga.raw_data(), gb.raw_data(), ga.numel() * dtype_size(ga.dtype())), 0)
            << name_of(c, dt) << " gradient " << i << " differs between two deterministic runs";
      }
    }
}

void deit_tiny_gpu_equals_cpu(bool dwc, bool gate) {
  SCOPED_TRACE(std::string("MiTA") + (dwc ? "+DWC" : "") + (gate ? "+gate" : ""));
  models::ViTConfig cfg = models::preset("deit_tiny_patch16_224");
  cfg.attention.type = "mita";
  cfg.attention.m = 25, cfg.attention.k = 25;
  cfg.attention.dwc = dwc, cfg.attention.gate = gate;
  models::VisionTransformer cpu_model(cfg), gpu_model(cfg);
  gpu_model.load_state_dict(cpu_model.state_dict());
  gpu_model.to(kGpu);
  const Tensor x = randn_cpu({2, 3, 224, 224}, 5);
  const Tensor y = Tensor::from_vector({1, 7}, {2}, DType::i64);
  models::MitaRoutingTap record(models::MitaRoutingTap::Mode::record);
  Tensor lc = cpu_model.forward(x);
  ops::cross_entropy(lc, y, 0.1).backward();
  ASSERT_EQ(record.routings.size(), 12u);
  record.mode = models::MitaRoutingTap::Mode::replay;
  Tensor lg = gpu_model.forward(x.to(kGpu));
  ops::cross_entropy(lg, y.to(kGpu), 0.1).backward();
  // Both f32, different summation orders through 12 blocks: as test_attention_kinds_cuda, 2e-4 of the scale.
  expect_gpu_model_equals_cpu(lg, lc, gpu_model, cpu_model, 5e-4);
}

TEST(MitaCuda, DeitTinyForwardBackwardEqualsTheCpuModel) {
  VT_REQUIRE_DEVICE();
  deit_tiny_gpu_equals_cpu(false, false);
  deit_tiny_gpu_equals_cpu(true, false);
  deit_tiny_gpu_equals_cpu(true, true);
}

TEST(MitaCuda, DeitTinyBf16TrainingStepIsFinite) {
  VT_REQUIRE_DEVICE();
  models::ViTConfig cfg = models::preset("deit_tiny_patch16_224");
  cfg.attention.type = "mita";
  models::VisionTransformer model(cfg);
  model.to(kGpu);
  Tensor loss;
  {
    nn::AutocastGuard autocast(DType::bf16);
    loss = ops::cross_entropy(model.forward(randn_cpu({4, 3, 224, 224}, 3).to(kGpu)),
                              Tensor::from_vector({1, 2, 3, 4}, {4}, DType::i64).to(kGpu), 0.1);
  }
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item()));
  for (auto& [name, p] : model.named_parameters()) EXPECT_TRUE(std::isfinite(max_abs(p.grad()))) << name;
}

TEST(MitaCuda, PackedQkvPathMatchesTheCpuAndTheSlicePath) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 1200;
  for (const Case& c : {kCases[0], kCases[1]})
    for (DType dt : {DType::f32, DType::bf16})
      for (bool route_only : {false, true}) {
        const std::string what = name_of(c, dt) + (route_only ? " route-only" : "");
        models::MitaOptions o;
        o.heads = kH, o.m = c.m, o.k = c.k, o.landmark_pool = c.pool, o.route_only = route_only;
        const Tensor qkv = randn_cpu({kB, c.N, 3 * kC}, seed += 10, dt), dout = randn_cpu({kB, c.N, kC}, seed + 5, dt);
        auto run = [&](Device dev, DType t, bool packed) {
          Tensor leaf = qkv.to(t).to(dev).detach();
          leaf.set_requires_grad(true);
          Tensor out = packed ? models::mita_core_packed(leaf, o)
                              : models::mita_core(leaf.slice(2, 0, kC), leaf.slice(2, kC, 2 * kC),
                                                  leaf.slice(2, 2 * kC, 3 * kC), o);
          EXPECT_TRUE(out.defined()) << what;
          out.backward(dout.to(t).to(dev));
          return std::pair{out.to(cpu()), leaf.grad().to(cpu())};
        };
        models::MitaRoutingTap tap(models::MitaRoutingTap::Mode::record);
        const auto gpu = run(kGpu, dt, true);
        tap.mode = models::MitaRoutingTap::Mode::replay;
        const auto slices = run(kGpu, dt, false);
        tap.next = 0;
        const auto ref = run(cpu(), DType::f64, true);
        if (dt == DType::f32) {
          EXPECT_LE(max_abs_diff(gpu.first, ref.first), 2e-5 * max_abs(ref.first)) << what << " out";
          EXPECT_LE(max_abs_diff(gpu.second, ref.second), 1e-4 * max_abs(ref.second)) << what << " d(qkv)";
        } else {
          expect_bf16_rule(gpu.first, slices.first, ref.first, (what + " out").c_str());
          expect_bf16_rule(gpu.second, slices.second, ref.second, (what + " d(qkv)").c_str());
        }
      }
}

// The packed bf16 training path with VT_MITA_JOINT and VT_MITA_SHARED set to `joint` and `shared` (null: not set)
// against the f64 CPU path, by the bf16 rule with the slice path (mita_attention + the composite V̂ in f32, the same
// routing replayed) as the plain bf16 implementation.
void expect_packed_bf16_path_matches_cpu(const Case& c, uint32_t seed, const char* joint, const char* shared,
                                         const std::string& what) {
  models::MitaOptions o;
  o.heads = kH, o.m = c.m, o.k = c.k, o.landmark_pool = c.pool;
  const Tensor qkv = randn_cpu({kB, c.N, 3 * kC}, seed, DType::bf16);
  const Tensor dout = randn_cpu({kB, c.N, kC}, seed + 5, DType::bf16);
  auto run = [&](Device dev, DType t, bool packed) {
    Tensor leaf = qkv.to(t).to(dev).detach();
    leaf.set_requires_grad(true);
    Tensor out =
        packed ? models::mita_core_packed(leaf, o)
               : models::mita_core(leaf.slice(2, 0, kC), leaf.slice(2, kC, 2 * kC), leaf.slice(2, 2 * kC, 3 * kC), o);
    out.backward(dout.to(t).to(dev));
    return std::pair{out.to(cpu()), leaf.grad().to(cpu())};
  };
  if (joint) setenv("VT_MITA_JOINT", joint, 1);
  if (shared) setenv("VT_MITA_SHARED", shared, 1);
  models::MitaRoutingTap tap(models::MitaRoutingTap::Mode::record);
  const auto gpu = run(kGpu, DType::bf16, true);
  if (joint) unsetenv("VT_MITA_JOINT");
  if (shared) unsetenv("VT_MITA_SHARED");
  tap.mode = models::MitaRoutingTap::Mode::replay;
  const auto slices = run(kGpu, DType::bf16, false);
  tap.next = 0;
  const auto ref = run(cpu(), DType::f64, true);
  expect_bf16_rule(gpu.first, slices.first, ref.first, (what + " out").c_str());
  expect_bf16_rule(gpu.second, slices.second, ref.second, (what + " d(qkv)").c_str());
}

// The packed training path under each choice of kernels for bf16 (the one-CTA core of short sequences; ops/mita.cpp:
// masked flash or per-expert joint attention; ops/mita_qkv.cpp: the shared branch as a flash attention, the fused
// CUDA-core kernel or f32 ops), and the LRA's m = k = 128 with 1-D pooling, which only the per-expert kernels take.
TEST(MitaCuda, PackedQkvPathUnderEveryBf16KernelChoice) {
  VT_REQUIRE_DEVICE();
  struct Choice {
    const char *joint, *shared;
  };
  uint32_t seed = 1500;
  for (const Case& c : {kCases[0], kCases[1], Case{2048, 128, 128, "sequence"}})
    for (const Choice& ch : {Choice{"small", "flash"}, Choice{"masked", "fused"}, Choice{"masked", "flash"},
                             Choice{"expert", "fused"}, Choice{"expert", "flash"}, Choice{"expert", "composite"}})
      expect_packed_bf16_path_matches_cpu(c, seed += 10, ch.joint, ch.shared,
                                          name_of(c, DType::bf16) + " joint " + ch.joint + ", shared " + ch.shared);
}

// The one-CTA core's gradients where its tiles are partly empty or many: m ≤ 16 (the second landmark tile unused) on
// a 7×7 grid with N = 50 (fewer key tiles than warps have work), k = 32, and N = 300 (19 key tiles).
TEST(MitaCuda, OneCtaCoreGradientsAtEdgeShapes) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 1900;
  for (const Case& c : {Case{50, 9, 16, "shifted"}, Case{128, 16, 32, "sequence"}, Case{300, 32, 32, "sequence"}}) {
    ASSERT_TRUE(
        kernels::cuda::mita_small_supported(kernels::MitaShape{kB, kH, c.N, c.m, c.k, kD, 0.125f, 1.0f / kD, true}))
        << name_of(c, DType::bf16);
    expect_packed_bf16_path_matches_cpu(c, seed += 10, "small", nullptr, name_of(c, DType::bf16) + " one-CTA core");
  }
}

// The one-CTA core (landmarks pooled and their gradient added to dq inside its kernels) under MiTA's DWC and gate:
// the DWC's share goes through a dv of its own, the gate's dg into d(qkvg) beside the kernel's in-place dq, dk, dv.
// Against the f64 CPU by the bf16 rule, the earlier kernels (VT_MITA_JOINT=masked: the separate pooling kernels, the
// same routing replayed) being the plain bf16 implementation.
TEST(MitaCuda, OneCtaCoreWithDwcAndGateMatchesTheCpu) {
  VT_REQUIRE_DEVICE();
  const Case c = kCases[0];
  uint32_t seed = 1900;
  for (const auto& [dwc, gate] : {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
    const std::string what = name_of(c, DType::bf16) + (dwc ? " DWC" : "") + (gate ? " gate" : "");
    models::MitaOptions o;
    o.heads = kH, o.m = c.m, o.k = c.k, o.landmark_pool = c.pool;
    const Tensor qkv = randn_cpu({kB, c.N, (gate ? 4 : 3) * kC}, seed += 10, DType::bf16);
    const Tensor dout = randn_cpu({kB, c.N, kC}, seed + 5, DType::bf16);
    const Tensor weight = randn_cpu({kC, 1, 3, 3}, seed + 6, DType::bf16),
                 bias = randn_cpu({kC}, seed + 7, DType::bf16);
    auto run = [&](Device dev, DType t) {
      Tensor leaf = qkv.to(t).to(dev).detach();
      leaf.set_requires_grad(true);
      const Tensor w = dwc ? weight.to(t).to(dev) : Tensor(), b = dwc ? bias.to(t).to(dev) : Tensor();
      Tensor out = models::mita_core_packed(leaf, o, w, b, gate);
      EXPECT_TRUE(out.defined()) << what;
      out.backward(dout.to(t).to(dev));
      return std::pair{out.to(cpu()), leaf.grad().to(cpu())};
    };
    models::MitaRoutingTap tap(models::MitaRoutingTap::Mode::record);
    const auto gpu = run(kGpu, DType::bf16);
    tap.mode = models::MitaRoutingTap::Mode::replay;
    setenv("VT_MITA_JOINT", "masked", 1);
    const auto plain = run(kGpu, DType::bf16);
    unsetenv("VT_MITA_JOINT");
    tap.next = 0;
    const auto ref = run(cpu(), DType::f64);
    expect_bf16_rule(gpu.first, plain.first, ref.first, (what + " out").c_str());
    expect_bf16_rule(gpu.second, plain.second, ref.second, (what + " d(qkv)").c_str());
  }
}

// The fused shared-branch kernels (kernels/cuda/mita/mita_shared.h) on head views cut out of packed [B, N, 3C] tensors,
// as in training, against the same formulas in f64 with CPU ops. p_shared/ds_shared are arbitrary values (the
// formulas do not need a softmax). f32: the kernels sum ≤ 197 products in f32 in another order than the f64
// reference, and dS goes through the cancellation dP − rowsum(dP∘P): 2e-5·max|ref| for the forward, 1e-4 for the
// gradients. bf16 results (V̂, dk, dv) by the bf16 rule with the rounded f64 answer as the plain one; probs and dr
// are f32 from exactly representable inputs, so they keep the f32 tolerances.
struct SharedCase {
  int64_t N, m, d;
};

kernels::AttentionView view_of(const Tensor& t) {
  return {t.raw_data(), t.strides()[0], t.strides()[1], t.strides()[2]};
}

TEST(MitaSharedCuda, ForwardAndBackwardMatchTheCpuComposite) {
  VT_REQUIRE_DEVICE();
  namespace kc = kernels::cuda;
  using ops::matmul, ops::softmax, ops::sum;
  const int64_t B = 2, H = 3;
  uint32_t seed = 3000;
  for (const SharedCase& c :
       {SharedCase{197, 25, 64}, SharedCase{50, 4, 32}, SharedCase{197, 4, 32}, SharedCase{50, 25, 64}})
    for (DType dt : {DType::f32, DType::bf16}) {
      const std::string what =
          "N=" + std::to_string(c.N) + " m=" + std::to_string(c.m) + " d=" + std::to_string(c.d) + " " + dtype_name(dt);
      const int64_t C = H * c.d;
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
      const kernels::MitaShape s{B, H, c.N, c.m, 1, c.d, static_cast<float>(scale), 1.f, true};
      ASSERT_TRUE(kc::mita_shared_supported(s)) << what;
      auto heads = [&](const Tensor& x, int64_t c0) {  // channels [c0, c0 + C) of [B, rows, W] as [B, H, rows, d]
        return x.slice(2, c0, c0 + C).reshape({B, x.size(1), H, c.d}).permute({0, 2, 1, 3});
      };
      const Tensor qkv = randn_cpu({B, c.N, 3 * C}, seed += 10, dt), landmarks = randn_cpu({B, c.m, C}, seed + 1, dt);
      const Tensor grad0 = randn_cpu({B, c.N, 3 * C}, seed + 2, dt), dout = randn_cpu({B, c.N, C}, seed + 3, dt);
      const Tensor p_shared = randn_cpu({B, H, c.N, c.m}, seed + 4), ds_shared = randn_cpu({B, H, c.N, c.m}, seed + 5);
      // GPU: the kernels on views of the packed tensors; dk, dv are added into channels C.. of `grad`.
      const Tensor qkv_g = qkv.to(kGpu), lm_g = landmarks.to(kGpu), dout_g = dout.to(kGpu), grad = grad0.to(kGpu);
      ASSERT_EQ(static_cast<const void*>(heads(grad, C).raw_data()),
                static_cast<const void*>(static_cast<const char*>(grad.raw_data()) + C * dtype_size(dt)))
          << "the head split must be a view";
      const Tensor ps_g = p_shared.to(kGpu), ds_g = ds_shared.to(kGpu);
      const Tensor v_hat = Tensor::empty({B, H, c.m, c.d}, dt, kGpu);
      const Tensor probs = Tensor::empty({B, H, c.m, c.N}, DType::f32, kGpu);
      const Tensor dr = Tensor::empty({B, c.m, C}, DType::f32, kGpu);
      const Tensor q_g = heads(qkv_g, 0), k_g = heads(qkv_g, C), v_g = heads(qkv_g, 2 * C), r_g = heads(lm_g, 0);
      kc::mita_shared_forward(dt, view_of(v_hat), probs.data<float>(), view_of(r_g), view_of(k_g), view_of(v_g), s,
                              nullptr);
      kc::mita_shared_backward(dt, view_of(heads(grad, C)), view_of(heads(grad, 2 * C)), dr.data<float>(),
                               probs.data<float>(), ps_g.data<float>(), ds_g.data<float>(), view_of(heads(dout_g, 0)),
                               view_of(q_g), view_of(r_g), view_of(k_g), view_of(v_g), s, nullptr);
      // f64 reference of the same formulas.
      auto f64 = [](const Tensor& t) { return t.to(DType::f64); };
      const Tensor Q = f64(heads(qkv, 0)), K = f64(heads(qkv, C)), V = f64(heads(qkv, 2 * C));
      const Tensor R = f64(heads(landmarks, 0));
      const Tensor P = softmax(matmul(R * scale, K.transpose(-2, -1)), -1);
      const Tensor vh_ref = matmul(P, V);
      const Tensor dvh = matmul(f64(p_shared).transpose(-2, -1), f64(heads(dout, 0)));
      const Tensor dP = matmul(dvh, V.transpose(-2, -1));
      const Tensor dS = P * (dP - sum(dP * P, {-1}, true)) * scale;
      const Tensor dR = matmul(f64(ds_shared).transpose(-2, -1), Q) + matmul(dS, K);
      const Tensor dk_ref = f64(heads(grad0, C)) + matmul(dS.transpose(-2, -1), R);
      const Tensor dv_ref = f64(heads(grad0, 2 * C)) + matmul(P.transpose(-2, -1), dvh);
      const Tensor dr_ref = dR.transpose(1, 2).reshape({B, c.m, C});
      auto close = [&](const Tensor& ours, const Tensor& ref, double rel, const char* label) {
        EXPECT_LE(max_abs_diff(ours, ref), rel * max_abs(ref) + 1e-9) << what << " " << label;
      };
      auto check = [&](const Tensor& ours, const Tensor& ref, double rel, const char* label) {
        if (dt == DType::f32) close(ours, ref, rel, label);
        else expect_bf16_rule(ours, ref.to(DType::bf16), ref, (what + " " + label).c_str());
      };
      close(probs, P, 2e-5, "probs");
      check(v_hat, vh_ref, 2e-5, "v_hat");
      close(dr, dr_ref, 1e-4, "dr");
      check(heads(grad, C), dk_ref, 1e-4, "dk");
      check(heads(grad, 2 * C), dv_ref, 1e-4, "dv");
      EXPECT_EQ(max_abs_diff(grad.slice(2, 0, C), grad0.slice(2, 0, C)), 0.0) << what << ": q's channels untouched";
    }
  // Logits of one (b, h) that cannot fit in shared memory: the caller must take the composite.
  EXPECT_FALSE(kc::mita_shared_supported({1, 1, 100000, 64, 1, 64, 0.125f, 1.f, true}));
  EXPECT_FALSE(kc::mita_shared_supported({1, 1, 197, 25, 1, 48, 0.125f, 1.f, true}));
}

}  // namespace
}  // namespace vt::test
