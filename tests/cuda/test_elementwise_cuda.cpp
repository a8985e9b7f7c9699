// CUDA element-wise ops (ops/elementwise.cpp → kernels/cuda/elementwise.cu) against the CPU ops on the same
// inputs: every unary op and its backward, binary ops with broadcasting, scalar forms, in-place add_/mul_, the
// bf16 ⊕ f32 → f32 promotion with its gradients, and autograd end to end on the device. Sizes include 1, 3 and
// 1000003 (vector tails) and views at an odd offset (the unaligned fallback). Skips without a device.
//
// Tolerances.
//  - Binary and scalar ops in f32/f64: one IEEE-rounded operation on each side (no fast-math, no contraction of a
//    single op), so the results must be bit-identical.
//  - Unary f32: both sides evaluate the same formula in f32 with library functions within 2 ulp (CUDA expf,
//    tanhf, rsqrtf; erff) or the CPU's erf approximation (|Δerf| < 1.5e-7, kernels/cpu/fast_math.h). With a few
//    roundings on top, |Δy| stays below ~1e-6·|y| + 4e-7·|x| (test_gelu_cuda.cpp measures GELU: 0.33e-6·|x|); we
//    allow 4e-6·|y| + 1e-6·max(1, |x|), while a wrong
//    formula or index is off by orders of magnitude more. Backward reads y (exp, sqrt, rsqrt, tanh, sigmoid) from
//    each side's own forward, and 1 − y² cancels: |Δdx| ≤ |dy|·2|y||Δy| ≈ 5e-7·|dy|; we allow 4e-6·|dx| +
//    2e-6·|dy|·max(1, |x|).
//  - bf16: expect_bf16_rule against the f64 CPU op; "plain" is the CPU f32 op on the bf16 inputs, rounded to bf16
//    (for a backward that reads y, y is rounded to bf16 first, as a bf16 forward stores it).
//  - Gradients through broadcasting sum in f32 in a different order than the CPU: 1e-5·max(1, |ref|) (at most a
//    dozen terms of size ≤ 4 here, so the f32 error is below 1e-6).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "cuda/device_test_util.h"
#include "kernels/cpu/elementwise.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

using kernels::UnaryOp;

struct UnaryCase {
  const char* name;
  UnaryOp op;
  Tensor (*fn)(const Tensor&);
  double lo, hi;
};

const UnaryCase kUnary[] = {
    {"exp", UnaryOp::exp, ops::exp, -4, 4},          {"log", UnaryOp::log, ops::log, 0.1, 10},
    {"sqrt", UnaryOp::sqrt, ops::sqrt, 0.1, 10},     {"rsqrt", UnaryOp::rsqrt, ops::rsqrt, 0.1, 10},
    {"tanh", UnaryOp::tanh, ops::tanh, -4, 4},       {"sigmoid", UnaryOp::sigmoid, ops::sigmoid, -8, 8},
    {"gelu", UnaryOp::gelu, ops::gelu, -6, 6},       {"silu", UnaryOp::silu, ops::silu, -8, 8},
    {"square", UnaryOp::square, ops::square, -3, 3}, {"neg", UnaryOp::neg, ops::neg, -3, 3},
    {"relu", UnaryOp::relu, ops::relu, -3, 3},
};

/// Uniform [lo, hi) values as a CPU tensor of `dtype`.
Tensor uniform_cpu(const Shape& shape, uint32_t seed, double lo, double hi, DType dtype = DType::f32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_vector(v, shape, dtype);
}

/// n elements of [lo, hi) as a CPU tensor and its device copy; `misaligned` makes the device one a view at
/// offset 1 of a larger buffer (not 16-byte aligned).
std::pair<Tensor, Tensor> on_both(int64_t n, uint32_t seed, double lo, double hi, DType dtype, bool misaligned) {
  Tensor base = uniform_cpu({n + 1}, seed, lo, hi, dtype);
  Tensor h = base.slice(0, 1, n + 1);
  Tensor d = misaligned ? base.to(kGpu).slice(0, 1, n + 1) : h.contiguous().to(kGpu);
  return {h.contiguous(), d};
}

// |gpu - cpu| <= rel·|cpu| + abs_scale[i] elementwise; reports the first few failures.
void expect_within(const Tensor& gpu, const Tensor& cpu_t, double rel, const std::vector<double>& abs_tol,
                   const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu_t.shape()) << what;
  auto g = gpu.to(cpu()).to_vector(), c = cpu_t.to_vector();
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double tol = rel * std::abs(c[i]) + abs_tol[i];
    if (!(std::abs(g[i] - c[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << " i=" << i << " gpu=" << g[i] << " cpu=" << c[i] << " tol=" << tol;
  }
}

void expect_equal(const Tensor& gpu, const Tensor& cpu_t, const std::string& what) {
  EXPECT_EQ(gpu.dtype(), cpu_t.dtype()) << what;
  EXPECT_TRUE(gpu.device() == kGpu) << what;
  ASSERT_EQ(gpu.shape(), cpu_t.shape()) << what;
  EXPECT_EQ(max_abs_diff(gpu, cpu_t), 0.0) << what;
}

TEST(ElementwiseCuda, UnaryForwardAndBackwardMatchCpuF32) {
  VT_REQUIRE_DEVICE();
  for (const auto& c : kUnary) {
    for (int64_t n : {int64_t(1), int64_t(3), int64_t(1000003)}) {
      for (bool misaligned : {false, true}) {
        const std::string what = std::string(c.name) + " n=" + std::to_string(n) + (misaligned ? " misaligned" : "");
        auto [xh, xd] = on_both(n, 11 + static_cast<uint32_t>(n), c.lo, c.hi, DType::f32, misaligned);
        auto [gh, gd] = on_both(n, 12 + static_cast<uint32_t>(n), -2, 2, DType::f32, misaligned);
        std::vector<double> xs = xh.to_vector(), gs = gh.to_vector(), fwd_abs(xs.size()), bwd_abs(xs.size());
        for (size_t i = 0; i < xs.size(); ++i) {
          fwd_abs[i] = 1e-6 * std::max(1.0, std::abs(xs[i]));
          bwd_abs[i] = 2e-6 * std::abs(gs[i]) * std::max(1.0, std::abs(xs[i]));
        }
        xh.set_requires_grad(true);
        Tensor xleaf = xd.detach().set_requires_grad(true);
        Tensor yh = c.fn(xh), yd = c.fn(xleaf);
        ASSERT_TRUE(yd.device() == kGpu) << what;
        expect_within(yd, yh, 4e-6, fwd_abs, what + " forward");
        yh.backward(gh);
        yd.backward(gd);
        ASSERT_TRUE(xleaf.grad().defined()) << what;
        EXPECT_TRUE(xleaf.grad().device() == kGpu) << what;
        expect_within(xleaf.grad(), xh.grad(), 4e-6, bwd_abs, what + " backward");
      }
    }
  }
}

TEST(ElementwiseCuda, UnaryBf16FollowsTheBf16Rule) {
  VT_REQUIRE_DEVICE();
  const int64_t n = 4099;
  for (const auto& c : kUnary) {
    Tensor x = uniform_cpu({n}, 21, c.lo, c.hi, DType::bf16);
    Tensor dy = uniform_cpu({n}, 22, -2, 2, DType::bf16);
    Tensor x32 = x.to(DType::f32), dy32 = dy.to(DType::f32);

    Tensor xd = x.to(kGpu).set_requires_grad(true);
    Tensor yd = c.fn(xd);
    ASSERT_EQ(yd.dtype(), DType::bf16) << c.name;
    yd.backward(dy.to(kGpu));
    ASSERT_EQ(xd.grad().dtype(), DType::bf16) << c.name;

    Tensor x64 = x.to(DType::f64).set_requires_grad(true);
    Tensor y64 = c.fn(x64);
    y64.backward(dy.to(DType::f64));

    Tensor y_plain = c.fn(x32).to(DType::bf16);
    Tensor y_saved = y_plain.to(DType::f32);
    Tensor dx_plain = Tensor::empty({n}, DType::f32);
    kernels::cpu::unary_backward(c.op, DType::f32, dx_plain.raw_data(), dy32.raw_data(), x32.raw_data(),
                                 y_saved.raw_data(), n);
    expect_bf16_rule(yd, y_plain, y64, (std::string(c.name) + " forward").c_str());
    expect_bf16_rule(xd.grad(), dx_plain.to(DType::bf16), x64.grad(), (std::string(c.name) + " backward").c_str());
  }
}

// MiTA's gate on the device against the CPU: g a slice of a packed [rows, 4C] tensor (read in place, 16-byte
// rows), then at an odd width (the one-element path); f32 within the unary ops' tolerance, bf16 by the bf16 rule
// against f64 with "plain" the composite bf16 ops x · silu(g) and their gradients.
TEST(ElementwiseCuda, SiluGateMatchesTheCpuWithTheGateASliceOfThePackedTensor) {
  VT_REQUIRE_DEVICE();
  for (int64_t C : {int64_t(384), int64_t(7)}) {
    const int64_t B = 3, N = 197;
    for (DType dt : {DType::f32, DType::bf16}) {
      const std::string what = "C=" + std::to_string(C) + " " + dtype_name(dt);
      Tensor x = uniform_cpu({B, N, C}, 41, -3, 3, dt), packed = uniform_cpu({B, N, 4 * C}, 42, -6, 6, dt);
      Tensor dy = uniform_cpu({B, N, C}, 43, -2, 2, dt);
      Tensor xd = x.to(kGpu).set_requires_grad(true), pd = packed.to(kGpu).set_requires_grad(true);
      Tensor yd = ops::silu_gate(xd, pd.slice(2, 3 * C, 4 * C));
      ASSERT_EQ(yd.dtype(), dt) << what;
      yd.backward(dy.to(kGpu));
      const Tensor dgd = pd.grad().slice(2, 3 * C, 4 * C);
      EXPECT_EQ(max_abs(pd.grad().slice(2, 0, 3 * C)), 0.0) << what << ": gradient outside the gate's slice";
      if (dt == DType::f32) {
        Tensor xh = x.clone().set_requires_grad(true), ph = packed.clone().set_requires_grad(true);
        Tensor yh = ops::silu_gate(xh, ph.slice(2, 3 * C, 4 * C));
        yh.backward(dy);
        const std::vector<double> tol(static_cast<size_t>(B * N * C), 1e-6);
        expect_within(yd, yh, 4e-6, tol, what + " forward");
        expect_within(xd.grad(), xh.grad(), 4e-6, tol, what + " dx");
        expect_within(dgd, ph.grad().slice(2, 3 * C, 4 * C).contiguous(), 4e-6, tol, what + " dg");
        continue;
      }
      Tensor x64 = x.to(DType::f64).set_requires_grad(true), g64 = packed.slice(2, 3 * C, 4 * C).to(DType::f64);
      g64.set_requires_grad(true);
      Tensor y64 = ops::silu_gate(x64, g64);
      y64.backward(dy.to(DType::f64));
      // Plain bf16: each op of the composite rounds its result to bf16.
      Tensor xp = x.to(kGpu).set_requires_grad(true), gp = packed.slice(2, 3 * C, 4 * C).contiguous().to(kGpu);
      gp.set_requires_grad(true);
      Tensor yp = xp * ops::silu(gp);
      yp.backward(dy.to(kGpu));
      expect_bf16_rule(yd, yp, y64, (what + " forward").c_str());
      expect_bf16_rule(xd.grad(), xp.grad(), x64.grad(), (what + " dx").c_str());
      expect_bf16_rule(dgd, gp.grad(), g64.grad(), (what + " dg").c_str());
    }
  }
}

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
struct NamedBinary {
  const char* name;
  BinaryFn fn;
};
const NamedBinary kBinary[] = {{"add", ops::add}, {"sub", ops::sub}, {"mul", ops::mul}, {"div", ops::div}};

TEST(ElementwiseCuda, SameShapeBinaryIsExactF32F64AtOddSizesAndOffsets) {
  VT_REQUIRE_DEVICE();
  for (DType dt : {DType::f32, DType::f64}) {
    for (int64_t n : {int64_t(1), int64_t(3), int64_t(1000003)}) {
      for (bool misaligned : {false, true}) {
        auto [ah, ad] = on_both(n, 31, 0.5, 2, dt, misaligned);
        auto [bh, bd] = on_both(n, 32, 0.5, 2, dt, false);  // aligned b with misaligned a: the fallback too
        for (const auto& op : kBinary)
          expect_equal(op.fn(ad, bd), op.fn(ah, bh),
                       std::string(op.name) + " " + dtype_name(dt) + " n=" + std::to_string(n));
      }
    }
  }
}

struct ShapePair {
  Shape a, b;
};
const ShapePair kBroadcast[] = {
    {{7, 5}, {5}},         {{3, 1, 5}, {4, 1}}, {{7, 5}, {}}, {{1}, {6, 1}}, {{2, 1, 3, 1, 2, 3}, {1, 4, 1, 2, 1, 3}},
    {{33, 1000}, {33, 1}},
};

TEST(ElementwiseCuda, BroadcastBinaryIsExactAndBf16FollowsTheRule) {
  VT_REQUIRE_DEVICE();
  for (const auto& s : kBroadcast) {
    Tensor a = uniform_cpu(s.a, 41, 0.5, 2), b = uniform_cpu(s.b, 42, 0.5, 2);
    Tensor a16 = a.to(DType::bf16), b16 = b.to(DType::bf16);
    for (const auto& op : kBinary) {
      const std::string what = std::string(op.name) + to_string(s.a) + to_string(s.b);
      expect_equal(op.fn(a.to(kGpu), b.to(kGpu)), op.fn(a, b), what);
      expect_equal(op.fn(b.to(kGpu), a.to(kGpu)), op.fn(b, a), what + " swapped");
      Tensor ours = op.fn(a16.to(kGpu), b16.to(kGpu));
      ASSERT_EQ(ours.dtype(), DType::bf16);
      Tensor plain = op.fn(a16.to(DType::f32), b16.to(DType::f32)).to(DType::bf16);
      expect_bf16_rule(ours, plain, op.fn(a16.to(DType::f64), b16.to(DType::f64)), what.c_str());
    }
  }
  // A transposed (strided) operand.
  Tensor a = uniform_cpu({6, 5}, 43, 0.5, 2), b = uniform_cpu({5, 6}, 44, 0.5, 2);
  for (const auto& op : kBinary)
    expect_equal(op.fn(a.to(kGpu), b.to(kGpu).transpose(0, 1)), op.fn(a, b.transpose(0, 1)), op.name);
}

TEST(ElementwiseCuda, ScalarFormsAndInPlaceOpsAreExact) {
  VT_REQUIRE_DEVICE();
  for (int64_t n : {int64_t(1), int64_t(3), int64_t(1000003)}) {
    auto [xh, xd] = on_both(n, 51, 0.5, 2, DType::f32, n > 3);
    expect_equal(ops::add(xd, 0.3), ops::add(xh, 0.3), "a+s");
    expect_equal(ops::mul(xd, -1.7), ops::mul(xh, -1.7), "a*s");
    expect_equal(ops::sub(2.5, xd), ops::sub(2.5, xh), "s-a");
    expect_equal(ops::div(3.0, xd), ops::div(3.0, xh), "s/a");
    expect_equal(xd / 7.0, xh / 7.0, "a/s");

    Tensor acc_h = xh.clone(), acc_d = xd.contiguous().clone();
    ops::mul_(acc_h, 0.37);
    ops::mul_(acc_d, 0.37);
    expect_equal(acc_d, acc_h, "mul_");
    auto [bh, bd] = on_both(n, 52, -1, 1, DType::f32, false);
    ops::add_(acc_h, bh);
    ops::add_(acc_d, bd);
    expect_equal(acc_d, acc_h, "add_");
  }
  // add_ with a broadcast operand, and an f32 accumulator taking a bf16 addend.
  Tensor acc_h = uniform_cpu({9, 7}, 53, -1, 1), acc_d = acc_h.to(kGpu);
  Tensor row = uniform_cpu({7}, 54, -1, 1, DType::bf16);
  ops::add_(acc_h, row);
  ops::add_(acc_d, row.to(kGpu));
  expect_equal(acc_d, acc_h, "add_ bf16 row into f32");
  Tensor b16 = Tensor::zeros({3}, DType::bf16, kGpu);
  expect_error([&] { ops::add_(b16, Tensor::zeros({3}, DType::f32, kGpu)); }, "[add_]");
}

TEST(ElementwiseCuda, BinaryBackwardWithBroadcastingMatchesCpu) {
  VT_REQUIRE_DEVICE();
  Tensor a = uniform_cpu({4, 1, 5}, 61, 0.5, 2), b = uniform_cpu({3, 5}, 62, 0.5, 2);
  Tensor w = uniform_cpu({4, 3, 5}, 63, -1, 1);
  for (const auto& op : kBinary) {
    Tensor ah = a.clone().set_requires_grad(true), bh = b.clone().set_requires_grad(true);
    Tensor ad = a.to(kGpu).set_requires_grad(true), bd = b.to(kGpu).set_requires_grad(true);
    ops::sum(ops::mul(op.fn(ah, bh), w)).backward();
    ops::sum(ops::mul(op.fn(ad, bd), w.to(kGpu))).backward();
    ASSERT_TRUE(ad.grad().device() == kGpu && bd.grad().device() == kGpu) << op.name;
    EXPECT_LE(max_abs_diff(ad.grad(), ah.grad()), 1e-5 * std::max(1.0, max_abs(ah.grad()))) << op.name;
    EXPECT_LE(max_abs_diff(bd.grad(), bh.grad()), 1e-5 * std::max(1.0, max_abs(bh.grad()))) << op.name;
  }
}

TEST(ElementwiseCuda, Bf16WithF32PromotesToF32WithGradientsInInputDtypes) {
  VT_REQUIRE_DEVICE();
  Tensor a = uniform_cpu({6, 5}, 71, 0.5, 2, DType::bf16), b = uniform_cpu({5}, 72, 0.5, 2);
  Tensor w = uniform_cpu({6, 5}, 73, -1, 1);
  for (const auto& op : kBinary) {
    Tensor ah = a.clone().set_requires_grad(true), bh = b.clone().set_requires_grad(true);
    Tensor ad = a.to(kGpu).set_requires_grad(true), bd = b.to(kGpu).set_requires_grad(true);
    Tensor yh = op.fn(ah, bh), yd = op.fn(ad, bd);
    EXPECT_EQ(yd.dtype(), DType::f32) << op.name;
    expect_equal(yd, yh, std::string(op.name) + " bf16 op f32");
    expect_equal(op.fn(bd, ad), op.fn(bh, ah), std::string(op.name) + " f32 op bf16");
    ops::sum(ops::mul(yh, w)).backward();
    ops::sum(ops::mul(yd, w.to(kGpu))).backward();
    EXPECT_EQ(ad.grad().dtype(), DType::bf16) << op.name;
    EXPECT_EQ(bd.grad().dtype(), DType::f32) << op.name;
    // a's gradient is element-wise (no sum) and rounded to bf16: equal; b's sums 6 rows in another order.
    EXPECT_EQ(max_abs_diff(ad.grad(), ah.grad()), 0.0) << op.name;
    EXPECT_LE(max_abs_diff(bd.grad(), bh.grad()), 1e-5 * std::max(1.0, max_abs(bh.grad()))) << op.name;
  }
  expect_error([] { ops::add(Tensor::zeros({2}, DType::f64, kGpu), Tensor::zeros({2}, DType::f32, kGpu)); },
               "dtypes differ");
}

// A small graph with a reused input (the engine sums two gradients on the device), the default seed of
// backward() on a device scalar, and a second backward accumulating into the leaf's gradient.
TEST(ElementwiseCuda, AutogradRunsEndToEndOnTheDevice) {
  VT_REQUIRE_DEVICE();
  Tensor x = uniform_cpu({5, 7}, 81, -1, 1), w = uniform_cpu({7}, 82, -1, 1);
  auto loss_of = [](const Tensor& xv, const Tensor& wv) {
    Tensor h = ops::add(ops::mul(ops::tanh(xv), wv), ops::exp(xv));
    return ops::mean(ops::square(ops::sub(h, ops::sigmoid(xv))));
  };
  Tensor xh = x.clone().set_requires_grad(true), wh = w.clone().set_requires_grad(true);
  Tensor xd = x.to(kGpu).set_requires_grad(true), wd = w.to(kGpu).set_requires_grad(true);
  for (int step = 0; step < 2; ++step) {
    Tensor lh = loss_of(xh, wh), ld = loss_of(xd, wd);
    ASSERT_TRUE(ld.device() == kGpu);
    EXPECT_NEAR(ld.item(), lh.item(), 1e-5 * std::max(1.0, std::abs(lh.item())));
    lh.backward();
    ld.backward();  // default seed: ones on the device
  }
  ASSERT_TRUE(xd.grad().device() == kGpu && wd.grad().device() == kGpu);
  EXPECT_LE(max_abs_diff(xd.grad(), xh.grad()), 1e-5 * std::max(1.0, max_abs(xh.grad())));
  EXPECT_LE(max_abs_diff(wd.grad(), wh.grad()), 1e-5 * std::max(1.0, max_abs(wh.grad())));
}

}  // namespace
}  // namespace vt::test
