// The segmentation ops on the GPU against the CPU ops on the same inputs: interpolate_bilinear (up, down, same
// size, odd sizes, a transposed view, 32² → 512² as the segmenter does), pixel_cross_entropy (ignored pixels, all
// ignored, K = 150 at 128² with B = 8) and l2_normalize (narrow, wide, zero rows), forward and backward.
//
// f32 tolerances, per element, from the absolute terms each result sums (u = 2^-23):
// - bilinear forward: the taps are bit-identical (computed unfused on both sides), then 4 products and 3 sums,
//   which the GPU may fuse → 8u·Σ|w·x|, with Σ|w·x| the CPU op applied to |x|.
// - bilinear backward: the GPU gathers, the CPU scatters, both in f32, in different orders; an input element
//   sums at most n = (2·out/in + 3)² terms → (16 + n)·u·Σ|w·g|, with Σ|w·g| the CPU backward of |g|
//   (the worst-case summation bound; a wrong tap is off by a whole term, far more).
// - pixel CE: the CPU sums in f64, the GPU's online log-sum-exp adds K f32 terms (expf ≤ 2 ulp), see
//   lse_tolerance; the mean adds a 256-tree, a stride-1024 loop and a 1024-tree: ≤ 40 roundings of the (positive)
//   sum. Gradients exp(x − lse)/count inherit lse's error relatively.
// - l2_normalize: Σ x² over C terms, C/32 in order per lane then a 5-level tree → (8 + C/32)·u relative; the
//   backward's y·g the same, relative to the row's scale.
// bf16: expect_bf16_rule against the f64 CPU op on the same bf16 values, `plain` being the CPU f32 op rounded to
// bf16. The pixel-CE loss is f32 for both logit dtypes, so it gets the f32 bound against the f64 op.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda/device_test_util.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

constexpr double kU = 0x1p-23;

Tensor leaf(const Tensor& t) { return t.detach().clone().set_requires_grad(true); }
Tensor gpu_leaf(const Tensor& t) { return t.to(kGpu).detach().set_requires_grad(true); }

Tensor abs_of(const Tensor& t) {
  auto v = t.to(cpu()).to_vector();
  for (auto& e : v) e = std::abs(e);
  return Tensor::from_vector(v, t.shape(), DType::f64);
}

/// |gpu − cpu| <= k·scale + atol for every element; reports the worst ones.
void expect_within(const Tensor& gpu, const Tensor& cpu_ref, const Tensor& scale, double k, double atol,
                   const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu_ref.shape()) << what;
  auto a = gpu.to(cpu()).to_vector(), b = cpu_ref.to(cpu()).to_vector(), s = scale.to(cpu()).to_vector();
  int64_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double tol = k * s[i] + atol, err = std::abs(a[i] - b[i]);
    worst = std::max(worst, err / tol);
    if (!(err <= tol) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " gpu " << a[i] << " cpu " << b[i] << " tol " << tol;
  }
  EXPECT_EQ(bad, 0) << what;
  std::printf("%s: max |err|/tol = %.3f\n", what.c_str(), worst);
}

// ---------------------------------------------------------------- interpolate_bilinear

struct BilinearCase {
  Shape shape;
  int64_t oh, ow;
  bool transposed;  // the input is x.transpose(2, 3) of a contiguous tensor
};
const std::vector<BilinearCase> kBilinearCases = {
    {{2, 3, 7, 9}, 16, 20, false},       // up, non-integer factors
    {{1, 4, 33, 31}, 8, 7, false},       // down
    {{2, 5, 13, 17}, 13, 17, false},     // same size
    {{1, 2, 1, 5}, 4, 3, false},         // one input row
    {{2, 3, 5, 40}, 17, 6, false},       // up in H, down in W
    {{2, 3, 9, 6}, 11, 4, true},         // a non-contiguous view
    {{1, 3, 32, 32}, 512, 512, false}};  // the segmenter's masks → logits (16x)

std::string name_of(const BilinearCase& c) {
  return "bilinear " + to_string(c.shape) + " -> " + std::to_string(c.oh) + "x" + std::to_string(c.ow) +
         (c.transposed ? " transposed" : "");
}

Tensor bilinear(const BilinearCase& c, const Tensor& x) {
  return ops::interpolate_bilinear(c.transposed ? x.transpose(2, 3) : x, c.oh, c.ow);
}

Shape out_shape(const BilinearCase& c) { return {c.shape[0], c.shape[1], c.oh, c.ow}; }

TEST(SegOpsCuda, InterpolateBilinearF32MatchesCpu) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 1;
  for (const auto& c : kBilinearCases) {
    const std::string what = name_of(c);
    SCOPED_TRACE(what);
    Tensor x = randn_cpu(c.shape, seed++, DType::f32, 2.0);
    Tensor dy = randn_cpu(out_shape(c), seed++, DType::f32);
    Tensor xc = leaf(x), xg = gpu_leaf(x);
    Tensor yc = bilinear(c, xc), yg = bilinear(c, xg);
    ASSERT_EQ(yg.dtype(), DType::f32);
    ASSERT_EQ(yg.device(), kGpu);
    yc.backward(dy);
    yg.backward(dy.to(kGpu));
    expect_within(yg, yc, bilinear(c, abs_of(x)), 8 * kU, 1e-30, what + " forward");
    Tensor x64 = leaf(x.to(DType::f64));
    bilinear(c, x64).backward(abs_of(dy));
    const Tensor vx = c.transposed ? x.transpose(2, 3) : x;
    const double ny = 2.0 * static_cast<double>(c.oh) / static_cast<double>(vx.size(2)) + 3;
    const double nx = 2.0 * static_cast<double>(c.ow) / static_cast<double>(vx.size(3)) + 3;
    expect_within(xg.grad(), xc.grad(), x64.grad(), (16 + ny * nx) * kU, 1e-30, what + " backward");
    // The gather backward is deterministic: a second run gives the same bits.
    Tensor xg2 = gpu_leaf(x);
    bilinear(c, xg2).backward(dy.to(kGpu));
    EXPECT_EQ(xg2.grad().to(cpu()).to_vector(), xg.grad().to(cpu()).to_vector()) << what;
  }
}

TEST(SegOpsCuda, InterpolateBilinearBf16FollowsTheBf16Rule) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 100;
  for (const auto& c : kBilinearCases) {
    const std::string what = name_of(c) + " bf16";
    SCOPED_TRACE(what);
    Tensor xb = randn_cpu(c.shape, seed++, DType::bf16, 2.0);
    Tensor dyb = randn_cpu(out_shape(c), seed++, DType::bf16);
    Tensor xg = gpu_leaf(xb);
    Tensor yg = bilinear(c, xg);
    ASSERT_EQ(yg.dtype(), DType::bf16);
    yg.backward(dyb.to(kGpu));
    ASSERT_EQ(xg.grad().dtype(), DType::bf16);
    Tensor x64 = leaf(xb.to(DType::f64)), x32 = leaf(xb.to(DType::f32));
    Tensor y64 = bilinear(c, x64), y32 = bilinear(c, x32);
    y64.backward(dyb.to(DType::f64));
    y32.backward(dyb.to(DType::f32));
    expect_bf16_rule(yg, y32.to(DType::bf16), y64, (what + " forward").c_str());
    expect_bf16_rule(xg.grad(), x32.grad().to(DType::bf16), x64.grad(), (what + " backward").c_str());
  }
}

// ---------------------------------------------------------------- pixel_cross_entropy

struct PixelCeCase {
  Shape shape;    // [B, K, H, W]
  int64_t every;  // pixels i with i % every == 0 are ignored (0: none; 1: all)
};
const std::vector<PixelCeCase> kPixelCeCases = {
    {{2, 5, 7, 9}, 3}, {{1, 150, 33, 31}, 7}, {{3, 1, 4, 5}, 2}, {{2, 19, 11, 13}, 0}, {{8, 150, 128, 128}, 10}};

Tensor seg_target(const Shape& s, int64_t every, uint32_t seed) {
  const int64_t n = s[0] * s[2] * s[3], K = s[1];
  std::mt19937 rng(seed);
  std::vector<double> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    t[i] = (every > 0 && i % every == 0) ? 255.0 : static_cast<double>(rng() % static_cast<uint32_t>(K));
  return Tensor::from_vector(t, {s[0], s[2], s[3]}, DType::i64);
}

// Absolute error bound of an f32 online log-sum-exp over K terms (each expf ≤ 2 ulp, K sequential adds) with
// |x| <= max_x: (16 + K)·u from the sum, 4u·|lse| from the final m + log(s).
double lse_tolerance(int64_t K, double max_x) {
  return (16.0 + static_cast<double>(K)) * kU + 4 * kU * (max_x + std::log(static_cast<double>(K)) + 1);
}

std::string name_of(const PixelCeCase& c) {
  return "pixel_ce " + to_string(c.shape) + " ignore every " + std::to_string(c.every);
}

TEST(SegOpsCuda, PixelCrossEntropyF32MatchesCpu) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 200;
  std::vector<PixelCeCase> cases = kPixelCeCases;
  cases.push_back({{2, 6, 5, 5}, 1});  // every pixel ignored: loss 0, zero gradient
  for (const auto& c : cases) {
    const std::string what = name_of(c);
    SCOPED_TRACE(what);
    Tensor x = randn_cpu(c.shape, seed++, DType::f32, 3.0);
    Tensor t = seg_target(c.shape, c.every, seed++);
    Tensor xc = leaf(x), xg = gpu_leaf(x);
    Tensor lc = ops::pixel_cross_entropy(xc, t), lg = ops::pixel_cross_entropy(xg, t.to(kGpu));
    ASSERT_EQ(lg.dtype(), DType::f32);
    ASSERT_EQ(lg.device(), kGpu);
    lc.backward();
    lg.backward();
    const double tol = lse_tolerance(c.shape[1], max_abs(x));
    const double cpu_loss = lc.item(), gpu_loss = lg.to(cpu()).item();
    EXPECT_NEAR(gpu_loss, cpu_loss, tol + 40 * kU * std::abs(cpu_loss)) << what;
    if (c.every == 1) {
      EXPECT_EQ(gpu_loss, 0.0) << what;
    }
    // dlogits = (softmax − onehot)·k with k = 1/count ≈ max |dlogits|: the relative error of exp(x − lse), plus
    // that much of k for the target element's cancellation.
    const double k = max_abs(xc.grad());
    expect_within(xg.grad(), xc.grad(), abs_of(xc.grad()), 2 * tol, 2 * tol * k + 1e-30, what + " backward");
  }
}

TEST(SegOpsCuda, PixelCrossEntropyBf16) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 300;
  for (const auto& c : kPixelCeCases) {
    const std::string what = name_of(c) + " bf16";
    SCOPED_TRACE(what);
    Tensor xb = randn_cpu(c.shape, seed++, DType::bf16, 3.0);
    Tensor t = seg_target(c.shape, c.every, seed++);
    Tensor xg = gpu_leaf(xb);
    Tensor lg = ops::pixel_cross_entropy(xg, t.to(kGpu));
    ASSERT_EQ(lg.dtype(), DType::f32);
    lg.backward();
    ASSERT_EQ(xg.grad().dtype(), DType::bf16);
    Tensor x64 = leaf(xb.to(DType::f64)), x32 = leaf(xb.to(DType::f32));
    Tensor l64 = ops::pixel_cross_entropy(x64, t);
    l64.backward();
    ops::pixel_cross_entropy(x32, t).backward();
    const double tol = lse_tolerance(c.shape[1], max_abs(xb));
    EXPECT_NEAR(lg.to(cpu()).item(), l64.item(), tol + 40 * kU * std::abs(l64.item())) << what;
    expect_bf16_rule(xg.grad(), x32.grad().to(DType::bf16), x64.grad(), (what + " backward").c_str());
  }
}

// ---------------------------------------------------------------- l2_normalize

const std::vector<Shape> kL2Shapes = {{7, 100}, {3, 5, 1}, {64, 300}, {2, 3, 1500}, {1025, 33}};

// Rows 0 and 3 (when present) are zeroed: the eps branch (f32 test only; its g/eps would dominate the bf16 rule).
Tensor l2_input(const Shape& s, uint32_t seed) {
  auto v = randn_cpu(s, seed, DType::f64).to_vector();
  const int64_t C = s.back(), rows = numel(s) / C;
  for (int64_t r : {int64_t{0}, int64_t{3}})
    if (r < rows)
      for (int64_t c = 0; c < C; ++c) v[r * C + c] = 0;
  return Tensor::from_vector(v, s, DType::f32);
}

// Per element, the absolute terms of dx = (g − y·Σ_j y_j·g_j)·inv: (|g| + |y|·Σ_j |y_j·g_j|)·inv, the scale of
// its rounding error (the cancellation of g − y·(y·g) leaves dx itself much smaller where y = ±1).
Tensor l2_backward_terms(const Tensor& x, const Tensor& g, double eps) {
  auto xv = x.to_vector(), gv = g.to_vector();
  const int64_t C = x.shape().back(), rows = x.numel() / C;
  std::vector<double> out(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0, yg = 0;
    for (int64_t c = 0; c < C; ++c) ss += xv[r * C + c] * xv[r * C + c];
    const double inv = 1.0 / std::max(std::sqrt(ss), eps);
    for (int64_t c = 0; c < C; ++c) yg += std::abs(xv[r * C + c] * inv * gv[r * C + c]);
    for (int64_t c = 0; c < C; ++c)
      out[r * C + c] = (std::abs(gv[r * C + c]) + std::abs(xv[r * C + c] * inv) * yg) * inv;
  }
  return Tensor::from_vector(out, x.shape(), DType::f64);
}

TEST(SegOpsCuda, L2NormalizeF32MatchesCpu) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 400;
  for (const auto& s : kL2Shapes) {
    const std::string what = "l2_normalize " + to_string(s);
    SCOPED_TRACE(what);
    Tensor x = l2_input(s, seed++), dy = randn_cpu(s, seed++, DType::f32);
    Tensor xc = leaf(x), xg = gpu_leaf(x);
    Tensor yc = ops::l2_normalize(xc, 1e-6), yg = ops::l2_normalize(xg, 1e-6);
    ASSERT_EQ(yg.dtype(), DType::f32);
    yc.backward(dy);
    yg.backward(dy.to(kGpu));
    const double t = (8.0 + static_cast<double>(s.back()) / 32.0) * kU;
    expect_within(yg, yc, abs_of(yc), 2 * t, 1e-30, what + " forward");
    expect_within(xg.grad(), xc.grad(), l2_backward_terms(x, dy, 1e-6), 4 * t, 1e-30, what + " backward");
  }
}

TEST(SegOpsCuda, L2NormalizeBf16FollowsTheBf16Rule) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 500;
  for (const auto& s : kL2Shapes) {
    // C = 1: the exact answers are y = ±1 and dx = 0, which plain bf16 hits exactly and f32 math misses by an
    // ulp (x·(1/x) ≠ 1), so the rule's reference error is 0; the f32 test covers that shape.
    if (s.back() == 1) continue;
    const std::string what = "l2_normalize bf16 " + to_string(s);
    SCOPED_TRACE(what);
    Tensor xb = randn_cpu(s, seed++, DType::bf16), dyb = randn_cpu(s, seed++, DType::bf16);
    Tensor xg = gpu_leaf(xb);
    Tensor yg = ops::l2_normalize(xg);
    ASSERT_EQ(yg.dtype(), DType::bf16);
    yg.backward(dyb.to(kGpu));
    ASSERT_EQ(xg.grad().dtype(), DType::bf16);
    Tensor x64 = leaf(xb.to(DType::f64)), x32 = leaf(xb.to(DType::f32));
    Tensor y64 = ops::l2_normalize(x64), y32 = ops::l2_normalize(x32);
    y64.backward(dyb.to(DType::f64));
    y32.backward(dyb.to(DType::f32));
    expect_bf16_rule(yg, y32.to(DType::bf16), y64, (what + " forward").c_str());
    expect_bf16_rule(xg.grad(), x32.grad().to(DType::bf16), x64.grad(), (what + " backward").c_str());
  }
}

}  // namespace
}  // namespace vt::test
