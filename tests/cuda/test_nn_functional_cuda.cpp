// CUDA softmax / log_softmax, LayerNorm and the fused cross-entropy losses against the CPU ops on identical
// inputs: forward and backward, odd row widths, the warp-per-row and block-per-row paths, bf16 storage.
//
// f32 tolerance. The CPU kernels accumulate row sums in f64; ours accumulate in f32: each thread adds about
// n/32 terms in order, then a shuffle tree adds 5-9 levels, and the element math adds a few ulp-rounded ops
// (expf <= 2 ulp, rsqrtf <= 2 ulp). So an output that depends on a row sum of n terms is within about
// (8 + n/32)·2^-23 relative of the CPU value (chain_tol); outputs that cancel (log-softmax, backward formulas,
// LayerNorm dx) get that bound relative to the tensor's scale (max |cpu|) instead of the element. A wrong index,
// constant or missing term is off by the size of a term, orders of magnitude more.
// bf16: expect_bf16_rule against the f64 CPU op on the same bf16-valued inputs, `plain` being the CPU f32 op with
// its output (and for backward its saved output) rounded to bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda/device_test_util.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/softmax.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

double chain_tol(int64_t n) { return (8.0 + static_cast<double>(n) / 32.0) * 0x1p-23; }

/// |gpu − cpu| <= rtol·|cpu| + atol for every element; reports the worst one.
void expect_near_f32(const Tensor& gpu, const Tensor& cpu_ref, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu_ref.shape()) << what;
  std::vector<double> a = gpu.to(cpu()).to_vector(), b = cpu_ref.to(cpu()).to_vector();
  int64_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double tol = rtol * std::abs(b[i]) + atol, err = std::abs(a[i] - b[i]);
    worst = std::max(worst, err / tol);
    if (!(err <= tol) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " gpu " << a[i] << " cpu " << b[i] << " tol " << tol;
  }
  EXPECT_EQ(bad, 0) << what;
  std::printf("%s: max |err|/tol = %.3f\n", what.c_str(), worst);
}

Tensor leaf(const Tensor& t) { return t.detach().clone().set_requires_grad(true); }
Tensor gpu_leaf(const Tensor& t) { return t.to(kGpu).detach().set_requires_grad(true); }

// ---------------------------------------------------------------- softmax

struct SoftmaxCase {
  Shape shape;
  int64_t dim;
};

const std::vector<SoftmaxCase> kSoftmaxCases = {{{5, 197}, -1}, {{3, 1000}, -1}, {{2, 4097}, -1},
                                                {{7, 33}, -1},  {{6, 1}, -1},    {{9, 1025}, -1},
                                                {{3, 5, 7}, 1}, {{4, 9}, 0},     {{2, 197, 3}, 1}};

TEST(SoftmaxCuda, F32ForwardAndBackwardMatchCpu) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 1;
  for (const auto& c : kSoftmaxCases) {
    for (bool log : {false, true}) {
      const std::string what =
          std::string(log ? "log_softmax " : "softmax ") + to_string(c.shape) + " dim " + std::to_string(c.dim);
      SCOPED_TRACE(what);
      Tensor x = randn_cpu(c.shape, seed++, DType::f32, 3.0), dy = randn_cpu(c.shape, seed++, DType::f32);
      auto run = [&](Tensor xi, const Tensor& g) {
        Tensor y = log ? ops::log_softmax(xi, c.dim) : ops::softmax(xi, c.dim);
        y.backward(g);
        return std::pair{y, xi.grad()};
      };
      auto [yc, dxc] = run(leaf(x), dy);
      auto [yg, dxg] = run(gpu_leaf(x), dy.to(kGpu));
      ASSERT_EQ(yg.dtype(), DType::f32);
      const int64_t d = c.dim < 0 ? c.dim + static_cast<int64_t>(c.shape.size()) : c.dim;
      const bool last = d + 1 == static_cast<int64_t>(c.shape.size());
      // A non-last dim is summed by one thread in order: R sequential terms, not R/32.
      const double t = chain_tol(last ? c.shape[d] : 32 * c.shape[d]);
      expect_near_f32(yg, yc, t, log ? t * max_abs(yc) : 1e-30, what + " forward");
      expect_near_f32(dxg, dxc, t, 4 * t * max_abs(dxc), what + " backward");
    }
  }
}

TEST(SoftmaxCuda, Bf16FollowsTheBf16Rule) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 100;
  for (const auto& c : kSoftmaxCases) {
    for (bool log : {false, true}) {
      const std::string what = std::string(log ? "log_softmax bf16 " : "softmax bf16 ") + to_string(c.shape);
      SCOPED_TRACE(what);
      Tensor xb = randn_cpu(c.shape, seed++, DType::bf16, 3.0), dyb = randn_cpu(c.shape, seed++, DType::bf16);
      auto op = [&](const Tensor& x) { return log ? ops::log_softmax(x, c.dim) : ops::softmax(x, c.dim); };
      // ours
      Tensor xg = gpu_leaf(xb);
      Tensor yg = op(xg);
      ASSERT_EQ(yg.dtype(), DType::bf16);
      yg.backward(dyb.to(kGpu));
      // f64 reference on the same values
      Tensor x64 = leaf(xb.to(DType::f64));
      Tensor y64 = op(x64);
      y64.backward(dyb.to(DType::f64));
      // plain bf16: f32 math, output rounded to bf16; its backward starts from that rounded output
      Tensor y_plain = op(xb.to(DType::f32)).to(DType::bf16);
      Tensor yp32 = y_plain.to(DType::f32).contiguous(), dy32 = dyb.to(DType::f32).contiguous();
      Tensor dx_plain = Tensor::empty(c.shape, DType::f32);
      const int64_t d = c.dim < 0 ? c.dim + static_cast<int64_t>(c.shape.size()) : c.dim;
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < d; ++i) outer *= c.shape[i];
      for (size_t i = d + 1; i < c.shape.size(); ++i) inner *= c.shape[i];
      kernels::cpu::softmax_backward(DType::f32, dx_plain.raw_data(), dy32.raw_data(), yp32.raw_data(), outer,
                                     c.shape[d], inner, log);
      expect_bf16_rule(yg, y_plain, y64, (what + " forward").c_str());
      expect_bf16_rule(xg.grad(), dx_plain.to(DType::bf16), x64.grad(), (what + " backward").c_str());
    }
  }
}

// ---------------------------------------------------------------- layer_norm

struct LnCase {
  Shape shape;
  bool weight, bias;
};

// C a multiple of 8 up to 1024 takes the packed (register) kernels for f32 and bf16, C = 100 only for f32 (a
// multiple of 4), other C the generic kernels.
const std::vector<LnCase> kLnCases = {
    {{4, 197, 192}, true, true}, {{300, 384}, true, true}, {{64, 768}, true, false},
    {{37, 7}, false, true},      {{1, 5}, false, false},   {{6, 7000}, true, true},  // > 6144: global scratch
    {{2053, 33}, true, true},                                                        // more tiles than backward blocks
    {{4513, 384}, true, true},  // odd rows, more tiles than packed blocks
    {{99, 192}, false, true},    {{41, 100}, true, true},  {{29, 1024}, true, true},
    {{17, 1032}, true, false},   {{5, 390}, true, true}};

// Per-column Σ_rows |dy·x̂| and Σ_rows |dy| (f64), the scale of the f32 summation error of dw and db.
std::pair<Tensor, Tensor> wb_abs_sums(const Tensor& x, const Tensor& dy, double eps) {
  const int64_t C = x.shape().back(), rows = x.numel() / C;
  auto xh = ops::layer_norm(x.to(DType::f64), Tensor(), Tensor(), eps).to_vector();
  auto g = dy.to(DType::f64).to_vector();
  std::vector<double> sw(C, 0.0), sb(C, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) sw[c] += std::abs(g[r * C + c] * xh[r * C + c]), sb[c] += std::abs(g[r * C + c]);
  return {Tensor::from_vector(sw, {C}, DType::f64), Tensor::from_vector(sb, {C}, DType::f64)};
}

// |gpu − ref| <= k·scale[c] per column.
void expect_within_scale(const Tensor& gpu, const Tensor& ref, const Tensor& scale, double k, const std::string& what) {
  auto a = gpu.to(cpu()).to_vector(), b = ref.to_vector(), s = scale.to_vector();
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= k * s[i] + 1e-30) && bad++ < 5)
      ADD_FAILURE() << what << ": column " << i << " gpu " << a[i] << " ref " << b[i] << " tol " << k * s[i];
  EXPECT_EQ(bad, 0) << what;
}

struct LnResult {
  Tensor y, dx, dw, db;
};

LnResult run_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& dy, Device dev,
                        std::optional<DType> out = {}) {
  Tensor xi = x.to(dev).detach().set_requires_grad(true);
  Tensor wi = w.defined() ? w.to(dev).detach().set_requires_grad(true) : Tensor();
  Tensor bi = b.defined() ? b.to(dev).detach().set_requires_grad(true) : Tensor();
  Tensor y = ops::layer_norm(xi, wi, bi, 1e-5, out);
  y.backward(dy.to(dev));
  return {y, xi.grad(), wi.defined() ? wi.grad() : Tensor(), bi.defined() ? bi.grad() : Tensor()};
}

TEST(LayerNormCuda, F32ForwardAndBackwardMatchCpu) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 200;
  for (const auto& c : kLnCases) {
    const int64_t C = c.shape.back();
    const std::string what = "layer_norm " + to_string(c.shape);
    SCOPED_TRACE(what);
    Tensor x = randn_cpu(c.shape, seed++, DType::f32, 2.0, 0.5), dy = randn_cpu(c.shape, seed++, DType::f32);
    Tensor w = c.weight ? randn_cpu({C}, seed++, DType::f32, 0.3, 1.0) : Tensor();
    Tensor b = c.bias ? randn_cpu({C}, seed++, DType::f32) : Tensor();
    LnResult cpu_r = run_layer_norm(x, w, b, dy, cpu()), gpu_r = run_layer_norm(x, w, b, dy, kGpu);
    const double t = chain_tol(C);
    expect_near_f32(gpu_r.y, cpu_r.y, t, t * max_abs(cpu_r.y), what + " y");
    expect_near_f32(gpu_r.dx, cpu_r.dx, t, 4 * t * max_abs(cpu_r.dx), what + " dx");
    // dw/db: sums over rows, per block then over <= 528 blocks in f32 (a few hundred sequential terms at most).
    auto [sw, sb] = wb_abs_sums(x, dy, 1e-5);
    if (c.weight) expect_within_scale(gpu_r.dw, cpu_r.dw, sw, 4e-5, what + " dw");
    if (c.bias) expect_within_scale(gpu_r.db, cpu_r.db, sb, 4e-5, what + " db");
    if (c.weight) {
      EXPECT_EQ(gpu_r.dw.dtype(), DType::f32);
    }
  }
}

TEST(LayerNormCuda, Bf16InputAndOutputFollowTheBf16Rule) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 300;
  for (const auto& c : kLnCases) {
    const int64_t C = c.shape.back();
    const std::string what = "layer_norm bf16 " + to_string(c.shape);
    SCOPED_TRACE(what);
    Tensor xb = randn_cpu(c.shape, seed++, DType::bf16, 2.0, 0.5), dyb = randn_cpu(c.shape, seed++, DType::bf16);
    Tensor w = c.weight ? randn_cpu({C}, seed++, DType::f32, 0.3, 1.0) : Tensor();
    Tensor b = c.bias ? randn_cpu({C}, seed++, DType::f32) : Tensor();
    auto to64 = [](const Tensor& t) { return t.defined() ? t.to(DType::f64) : Tensor(); };
    LnResult ours = run_layer_norm(xb, w, b, dyb, kGpu);
    ASSERT_EQ(ours.y.dtype(), DType::bf16);
    ASSERT_EQ(ours.dx.dtype(), DType::bf16);
    LnResult ref = run_layer_norm(xb.to(DType::f64), to64(w), to64(b), dyb.to(DType::f64), cpu());
    LnResult plain = run_layer_norm(xb.to(DType::f32), w, b, dyb.to(DType::f32), cpu());
    expect_bf16_rule(ours.y, plain.y.to(DType::bf16), ref.y, (what + " y").c_str());
    expect_bf16_rule(ours.dx, plain.dx.to(DType::bf16), ref.dx, (what + " dx").c_str());
    auto [sw, sb] = wb_abs_sums(xb, dyb, 1e-5);
    if (c.weight) expect_within_scale(ours.dw, ref.dw, sw, 4e-5, what + " dw");
    if (c.bias) expect_within_scale(ours.db, ref.db, sb, 4e-5, what + " db");
  }
}

TEST(LayerNormCuda, F32ResidualWithBf16OutputAndBack) {
  VT_REQUIRE_DEVICE();
  // f32 x -> bf16 y (the autocast case): y is the f32 result rounded once; dy arrives in bf16, dx is f32.
  const Shape shape{3, 197, 192};
  Tensor x = randn_cpu(shape, 400, DType::f32, 2.0), dyb = randn_cpu(shape, 401, DType::bf16);
  Tensor w = randn_cpu({192}, 402, DType::f32, 0.3, 1.0), b = randn_cpu({192}, 403, DType::f32);
  LnResult ours = run_layer_norm(x, w, b, dyb, kGpu, DType::bf16);
  ASSERT_EQ(ours.y.dtype(), DType::bf16);
  ASSERT_EQ(ours.dx.dtype(), DType::f32);
  LnResult ref = run_layer_norm(x.to(DType::f64), w.to(DType::f64), b.to(DType::f64), dyb.to(DType::f64), cpu());
  LnResult plain = run_layer_norm(x, w, b, dyb.to(DType::f32), cpu());
  expect_bf16_rule(ours.y, plain.y.to(DType::bf16), ref.y, "f32 -> bf16 y");
  const double t = chain_tol(192);
  expect_near_f32(ours.dx, plain.dx, t, 4 * t * max_abs(plain.dx), "f32 x, bf16 dy: dx");
  // bf16 x -> f32 y
  Tensor xb = x.to(DType::bf16);
  LnResult ours2 = run_layer_norm(xb, w, b, dyb.to(DType::f32), kGpu, DType::f32);
  ASSERT_EQ(ours2.y.dtype(), DType::f32);
  ASSERT_EQ(ours2.dx.dtype(), DType::bf16);
  LnResult plain2 = run_layer_norm(xb.to(DType::f32), w, b, dyb.to(DType::f32), cpu());
  expect_near_f32(ours2.y, plain2.y, t, t * max_abs(plain2.y), "bf16 x -> f32 y");
}

TEST(LayerNormCuda, RejectsNonF32Weight) {
  VT_REQUIRE_DEVICE();
  Tensor x = Tensor::zeros({3, 5}, DType::bf16, kGpu);
  expect_error([&] { ops::layer_norm(x, Tensor::ones({5}, DType::bf16, kGpu), Tensor(), 1e-5); }, "f32");
  expect_error([&] { ops::layer_norm(x, Tensor::ones({5}), Tensor(), 1e-5); }, "[layer_norm]");  // CPU weight
}

// ---------------------------------------------------------------- cross-entropy

Tensor labels(int64_t B, int64_t C, uint32_t seed) {
  std::vector<double> t(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) t[b] = static_cast<double>((b * 7919 + seed) % C);
  return Tensor::from_vector(t, {B}, DType::i64);
}

Tensor soft_targets(int64_t B, int64_t C, uint32_t seed) {
  auto v = randn_cpu({B, C}, seed, DType::f64).to_vector();
  for (int64_t b = 0; b < B; ++b) {
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += (v[b * C + c] = std::exp(v[b * C + c]));
    for (int64_t c = 0; c < C; ++c) v[b * C + c] /= s;
  }
  return Tensor::from_vector(v, {B, C}, DType::f32);
}

const std::vector<Shape> kLossShapes = {{64, 1000}, {7, 5}, {3, 2000}, {33, 197}, {1, 3}};

// Loss and gradient of logits (and of soft targets) on `dev`, the loss gradient being 2.5.
struct LossResult {
  Tensor loss, dlogits, dtarget;
};
LossResult run_loss(const Tensor& logits, const Tensor& target, double s, bool soft, Device dev) {
  Tensor li = logits.to(dev).detach().set_requires_grad(true);
  Tensor ti = soft ? target.to(dev).detach().set_requires_grad(true) : target.to(dev);
  Tensor loss = soft ? ops::soft_target_cross_entropy(li, ti) : ops::cross_entropy(li, ti, s);
  loss.backward(Tensor::full({}, 2.5, loss.dtype(), dev));
  return {loss, li.grad(), soft ? ti.grad() : Tensor()};
}

TEST(CrossEntropyCuda, F32MatchesCpuWithAndWithoutSmoothingAndSoftTargets) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 500;
  for (const Shape& sh : kLossShapes) {
    const int64_t B = sh[0], C = sh[1];
    Tensor logits = randn_cpu(sh, seed++, DType::f32, 3.0);
    for (int mode = 0; mode < 3; ++mode) {  // smoothing 0, smoothing 0.1, soft targets
      const bool soft = mode == 2;
      const double s = mode == 1 ? 0.1 : 0.0;
      const std::string what = (soft ? "soft ce " : "ce s=" + std::to_string(s) + " ") + to_string(sh);
      SCOPED_TRACE(what);
      Tensor target = soft ? soft_targets(B, C, seed++) : labels(B, C, seed++);
      LossResult c = run_loss(logits, target, s, soft, cpu()), g = run_loss(logits, target, s, soft, kGpu);
      ASSERT_EQ(g.loss.dtype(), DType::f32);
      ASSERT_TRUE(g.loss.device() == kGpu);
      const double t = chain_tol(C) + chain_tol(B);  // row sums, then the mean over rows
      // lse ~ max|x| + log C: the loss is a difference of terms of that size.
      const double scale = max_abs(logits) + std::log(static_cast<double>(C)) + 1;
      expect_near_f32(g.loss, c.loss, t, t * scale, what + " loss");
      const double k = 2.5 / static_cast<double>(B);  // the scale of the gradients: dloss / B
      expect_near_f32(g.dlogits, c.dlogits, t, t * scale * (max_abs(c.dlogits) + k), what + " dlogits");
      if (soft) expect_near_f32(g.dtarget, c.dtarget, t, t * (max_abs(c.dtarget) + k), what + " dtarget");
    }
  }
}

TEST(CrossEntropyCuda, Bf16LogitsFollowTheBf16Rule) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 600;
  for (const Shape& sh : kLossShapes) {
    const int64_t B = sh[0], C = sh[1];
    Tensor lb = randn_cpu(sh, seed++, DType::bf16, 3.0);
    for (int mode = 0; mode < 3; ++mode) {
      const bool soft = mode == 2;
      const double s = mode == 1 ? 0.1 : 0.0;
      const std::string what = (soft ? "soft ce bf16 " : "ce bf16 s=" + std::to_string(s) + " ") + to_string(sh);
      SCOPED_TRACE(what);
      Tensor target = soft ? soft_targets(B, C, seed++) : labels(B, C, seed++);
      LossResult ours = run_loss(lb, target, s, soft, kGpu);  // bf16 logits, f32 soft targets
      ASSERT_EQ(ours.loss.dtype(), DType::f32);
      ASSERT_EQ(ours.dlogits.dtype(), DType::bf16);
      Tensor t64 = soft ? target.to(DType::f64) : target;
      LossResult ref = run_loss(lb.to(DType::f64), t64, s, soft, cpu());
      LossResult plain = run_loss(lb.to(DType::f32), target, s, soft, cpu());
      // The loss is f32 from bf16-valued logits: the f32 rule of the test above against the CPU f32 op.
      const double t = chain_tol(C) + chain_tol(B);
      const double scale = max_abs(lb) + std::log(static_cast<double>(C)) + 1;
      expect_near_f32(ours.loss, plain.loss, t, t * scale, what + " loss");
      expect_bf16_rule(ours.dlogits, plain.dlogits.to(DType::bf16), ref.dlogits, (what + " dlogits").c_str(),
                       1e-6 * 2.5 / static_cast<double>(B));
      if (soft) {
        ASSERT_EQ(ours.dtarget.dtype(), DType::f32);
        expect_near_f32(ours.dtarget, plain.dtarget, t, t * max_abs(plain.dtarget), what + " dtarget");
      }
    }
  }
}

TEST(CrossEntropyCuda, LargeLogitsStayFiniteAndBadTargetsGiveNaN) {
  VT_REQUIRE_DEVICE();
  Tensor big = Tensor::from_vector({1000, 0}, {1, 2}, DType::f32);
  LossResult r = run_loss(big, Tensor::from_vector({1}, {1}, DType::i64), 0.0, false, kGpu);
  EXPECT_NEAR(r.loss.item(), 1000.0, 1e-3);
  auto d = r.dlogits.to(cpu()).to_vector();
  EXPECT_NEAR(d[0], 2.5, 1e-6);
  EXPECT_NEAR(d[1], -2.5, 1e-6);
  // No host sync for validation on CUDA: an out-of-range target makes the loss NaN instead of throwing.
  Tensor logits = randn_cpu({3, 5}, 700).to(kGpu);
  EXPECT_TRUE(std::isnan(ops::cross_entropy(logits, Tensor::from_vector({0, 7, 1}, {3}, DType::i64).to(kGpu)).item()));
  expect_error([&] { ops::cross_entropy(logits, Tensor::from_vector({0, 1, 1}, {3}, DType::i64)); }, "devices");
}

}  // namespace
}  // namespace vt::test
