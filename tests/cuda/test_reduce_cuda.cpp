// CUDA reductions (ops/reduce.cpp → kernels/cuda/reduce.cu) against the CPU ops: sum/mean over every dim subset,
// keepdim, the split (two-pass) paths for long rows and tall columns, strided inputs, max/argmax with ties,
// sum_to, and the backward of sum, mean and max on the device. Skips without a device.
//
// Tolerances.
//  - Exactness tests use small integer inputs: every partial sum is an integer below 2^24, so any f32 summation
//    order gives the exact sum, and mean is one multiplication by the same f32 1/count on both sides: results
//    must be bit-identical to the CPU (a dropped or doubled element shows as an integer error).
//  - Random N(0, 1) inputs in f32: the CPU sums in f64 (rows) or sequentially in f32 (leading dims), the GPU in
//    f32 in a tree (per-thread chunks, then shared memory, then a second pass over chunk partials). Rounding
//    errors of N(0, 1) sums grow like u·sqrt(R)·(a few) in practice (u = 6e-8): we allow 1e-5·sqrt(R) absolute,
//    about 100x that, while one dropped or doubled element (|x| ~ 1) is far above it for R < 10^10.
//  - f64: 1e-12·sqrt(R). bf16: expect_bf16_rule against the f64 CPU sum (plain: CPU f32 sum, rounded to bf16).
//  - max/argmax select an element: values and indices must equal the CPU's (first arg-max on ties).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "cuda/device_test_util.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

/// Integers uniform in [lo, hi] as a CPU tensor of `dtype` (exact in every float dtype).
Tensor ints_cpu(const Shape& shape, uint32_t seed, int lo, int hi, DType dtype = DType::f32) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_vector(v, shape, dtype);
}

std::string label(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  std::string out = to_string(s) + " dims{";
  for (int64_t d : dims) out += std::to_string(d) + ",";
  return out + "}" + (keepdim ? " keepdim" : "");
}

void expect_same(const Tensor& gpu, const Tensor& cpu_t, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu_t.shape()) << what;
  EXPECT_EQ(gpu.dtype(), cpu_t.dtype()) << what;
  EXPECT_TRUE(gpu.device() == kGpu) << what;
  EXPECT_EQ(max_abs_diff(gpu, cpu_t), 0.0) << what;
}

struct DimsCase {
  Shape shape;
  std::vector<int64_t> dims;
};

const DimsCase kDims[] = {
    {{1}, {}},
    {{3}, {}},
    {{1000003}, {}},
    {{7, 5, 3}, {0}},
    {{7, 5, 3}, {1}},
    {{7, 5, 3}, {2}},
    {{7, 5, 3}, {0, 1}},
    {{7, 5, 3}, {1, 2}},
    {{7, 5, 3}, {0, 2}},
    {{7, 5, 3}, {}},
    {{64, 40000}, {1}},  // long rows: split into chunks, second pass over the partials
    {{50000, 3}, {0}},   // tall thin columns (a bias gradient): split columns
    {{3, 100001, 2}, {1}},
    {{2, 3, 4, 5, 6}, {1, 3}},
    {{197, 192}, {0}},
    {{197, 192}, {-1}},
};

TEST(ReduceCuda, SumAndMeanOfIntegersAreExact) {
  VT_REQUIRE_DEVICE();
  for (const auto& c : kDims) {
    Tensor x = ints_cpu(c.shape, 1, -3, 3), xd = x.to(kGpu);
    for (bool keepdim : {false, true}) {
      const std::string what = label(c.shape, c.dims, keepdim);
      expect_same(ops::sum(xd, c.dims, keepdim), ops::sum(x, c.dims, keepdim), "sum " + what);
      expect_same(ops::mean(xd, c.dims, keepdim), ops::mean(x, c.dims, keepdim), "mean " + what);
    }
  }
  // Strided inputs: a transposed view and a slice at an odd offset.
  Tensor x = ints_cpu({40, 33}, 2, -3, 3), xd = x.to(kGpu);
  for (int64_t d : {0, 1}) {
    expect_same(ops::sum(xd.transpose(0, 1), {d}), ops::sum(x.transpose(0, 1), {d}), "transposed");
    expect_same(ops::sum(xd.slice(1, 1, 30), {d}), ops::sum(x.slice(1, 1, 30), {d}), "sliced");
  }
}

TEST(ReduceCuda, SumOfRandomValuesMatchesF64WithinF32Rounding) {
  VT_REQUIRE_DEVICE();
  for (const auto& c : kDims) {
    Tensor x = randn_cpu(c.shape, 3), x64 = x.to(DType::f64);
    const int64_t R = numel(c.shape) / std::max<int64_t>(1, ops::sum(x, c.dims).numel());
    const std::string what = label(c.shape, c.dims, false);
    EXPECT_LE(max_abs_diff(ops::sum(x.to(kGpu), c.dims), ops::sum(x64, c.dims)), 1e-5 * std::sqrt(double(R)))
        << "f32 " << what;
    EXPECT_LE(max_abs_diff(ops::sum(x64.to(kGpu), c.dims), ops::sum(x64, c.dims)), 1e-12 * std::sqrt(double(R)))
        << "f64 " << what;
  }
}

TEST(ReduceCuda, Bf16SumsAndMeansFollowTheBf16Rule) {
  VT_REQUIRE_DEVICE();
  const DimsCase cases[] = {
      {{64, 300}, {1}}, {{300, 48}, {0}}, {{8, 5000}, {1}}, {{6, 50, 7}, {0, 1}}, {{3000, 40}, {0}}};
  for (const auto& c : cases) {
    Tensor x = randn_cpu(c.shape, 4, DType::bf16, 1.0, 0.5);
    Tensor ours = ops::sum(x.to(kGpu), c.dims);
    ASSERT_EQ(ours.dtype(), DType::bf16);
    expect_bf16_rule(ours, ops::sum(x.to(DType::f32), c.dims).to(DType::bf16), ops::sum(x.to(DType::f64), c.dims),
                     ("sum " + label(c.shape, c.dims, false)).c_str());
    expect_bf16_rule(ops::mean(x.to(kGpu), c.dims), ops::mean(x.to(DType::f32), c.dims).to(DType::bf16),
                     ops::mean(x.to(DType::f64), c.dims), ("mean " + label(c.shape, c.dims, false)).c_str());
  }
}

TEST(ReduceCuda, MaxAndArgmaxMatchCpuIncludingTies) {
  VT_REQUIRE_DEVICE();
  struct MaxCase {
    Shape shape;
    int64_t dim;
  };
  const MaxCase cases[] = {{{7, 1000}, 1}, {{5, 37, 3}, 1},   {{1000003}, 0},   {{4, 6}, 0},
                           {{1, 1}, 1},    {{3, 65, 33}, -1}, {{2, 3, 4, 5}, 2}};
  for (const auto& c : cases) {
    // Few distinct values: many ties, so the first-arg-max rule is exercised.
    Tensor x = ints_cpu(c.shape, 5, -4, 4);
    for (DType dt : {DType::f32, DType::bf16, DType::f64}) {
      Tensor xd = x.to(dt).to(kGpu);
      Tensor xh = dt == DType::bf16 ? x : x.to(dt);  // the CPU has no bf16 max; the values are exact in f32
      for (bool keepdim : {false, true}) {
        const std::string what = std::string(dtype_name(dt)) + " " + label(c.shape, {c.dim}, keepdim);
        auto [vd, id] = ops::max(xd, c.dim, keepdim);
        auto [vh, ih] = ops::max(xh, c.dim, keepdim);
        EXPECT_EQ(vd.dtype(), dt) << what;
        EXPECT_EQ(vd.to(cpu()).to_vector(), vh.to_vector()) << what;
        expect_same(id, ih, "indices " + what);
        expect_same(ops::argmax(xd, c.dim, keepdim), ih, "argmax " + what);
      }
    }
  }
  // A strided input (transposed).
  Tensor x = randn_cpu({30, 17}, 6);
  expect_same(ops::max(x.to(kGpu).transpose(0, 1), 1).second, ops::max(x.transpose(0, 1), 1).second, "strided");
}

TEST(ReduceCuda, BackwardOfSumMeanMaxAndSumToMatchCpu) {
  VT_REQUIRE_DEVICE();
  Tensor x = randn_cpu({4, 6, 5}, 7), w = randn_cpu({4, 5}, 8);
  using Loss = Tensor (*)(const Tensor&, const Tensor&);
  const std::pair<const char*, Loss> losses[] = {
      {"sum", [](const Tensor& v, const Tensor& wt) { return ops::sum(ops::mul(ops::sum(v, {1}), wt)); }},
      {"mean keepdim",
       [](const Tensor& v, const Tensor& wt) { return ops::sum(ops::mul(ops::mean(v, {1}, true), wt.unsqueeze(1))); }},
      {"mean all", [](const Tensor& v, const Tensor&) { return ops::mean(ops::square(v)); }},
      {"max", [](const Tensor& v, const Tensor& wt) { return ops::sum(ops::mul(ops::max(v, 1).first, wt)); }},
      {"max last", [](const Tensor& v, const Tensor&) { return ops::sum(ops::max(v, -1, true).first); }},
  };
  for (const auto& [name, loss] : losses) {
    Tensor xh = x.clone().set_requires_grad(true), xd = x.to(kGpu).set_requires_grad(true);
    loss(xh, w).backward();
    loss(xd, w.to(kGpu)).backward();
    ASSERT_TRUE(xd.grad().defined()) << name;
    EXPECT_TRUE(xd.grad().device() == kGpu) << name;
    // At most 6 f32 terms per element gradient: 1e-6 relative is ~10 ulp.
    EXPECT_LE(max_abs_diff(xd.grad(), xh.grad()), 1e-6 * std::max(1.0, max_abs(xh.grad()))) << name;
  }
  Tensor g = randn_cpu({4, 3, 5}, 9), gd = g.to(kGpu);
  for (const Shape& s : {Shape{3, 1}, Shape{5}, Shape{1, 1, 1}, Shape{4, 1, 5}, Shape{}})
    EXPECT_LE(max_abs_diff(ops::sum_to(gd, s), ops::sum_to(g, s)), 1e-5) << "sum_to " << to_string(s);
}

}  // namespace
}  // namespace vt::test
