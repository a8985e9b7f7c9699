// CUDA random fills and dropout/drop_path against the CPU ops for the same generator state. uniform_, bernoulli
// and the dropout masks must be bit-identical (integer Philox plus IEEE f32/f64 arithmetic without fma on both
// sides) and the generator offsets must advance alike. normal_ and trunc_normal_ go through log/sin/cos/erf, whose
// device versions differ from glibc's by an ulp or two: they are compared within a few f32 ulp instead.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/device_test_util.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

// Raw bytes of a tensor in logical order.
std::vector<uint8_t> bytes_of(const Tensor& t) {
  Tensor c = t.to(cpu()).contiguous();
  std::vector<uint8_t> out(static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  if (!out.empty()) std::memcpy(out.data(), c.raw_data(), out.size());
  return out;
}

const std::vector<int64_t> kSizes = {1, 5, 1001, 100003};

TEST(RandomCuda, UniformIsBitIdenticalToCpu) {
  VT_REQUIRE_DEVICE();
  for (DType dt : {DType::f32, DType::f64, DType::bf16}) {
    for (int64_t n : kSizes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " n=" + std::to_string(n));
      Generator gc(42), gg(42);
      gc.set_state(42, 77);
      gg.set_state(42, 77);
      Tensor c = Tensor::empty({n}, dt), g = Tensor::empty({n}, dt, kGpu);
      ops::uniform_(c, -2, 3, gc);
      ops::uniform_(g, -2, 3, gg);
      EXPECT_EQ(bytes_of(g), bytes_of(c));
      EXPECT_EQ(gg.offset(), gc.offset());
    }
  }
}

TEST(RandomCuda, NonContiguousFillsMatchCpu) {
  VT_REQUIRE_DEVICE();
  // A transposed view is filled through a contiguous temporary: element i is the i-th in row-major order.
  Generator gc(5), gg(5);
  Tensor c = Tensor::zeros({37, 41}).transpose(0, 1), g = Tensor::zeros({37, 41}, DType::f32, kGpu).transpose(0, 1);
  ops::uniform_(c, 0, 1, gc);
  ops::uniform_(g, 0, 1, gg);
  EXPECT_EQ(bytes_of(g), bytes_of(c));
  EXPECT_EQ(gg.offset(), gc.offset());
}

// |gpu − cpu| <= ulps·2^-23·|cpu| + floor, the CPU and device libm functions differing by an ulp or two.
void expect_within_ulps(const Tensor& g, const Tensor& c, double ulps, double floor, const std::string& what) {
  auto a = g.to(cpu()).to_vector(), b = c.to_vector();
  ASSERT_EQ(a.size(), b.size());
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= ulps * 0x1p-23 * std::abs(b[i]) + floor) && bad++ < 5)
      ADD_FAILURE() << what << " element " << i << ": gpu " << a[i] << " cpu " << b[i];
  EXPECT_EQ(bad, 0) << what;
}

TEST(RandomCuda, NormalAndTruncNormalMatchCpuWithinUlps) {
  VT_REQUIRE_DEVICE();
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n=" + std::to_string(n));
    Generator gc(9), gg(9);
    Tensor c = Tensor::empty({n}), g = Tensor::empty({n}, DType::f32, kGpu);
    ops::normal_(c, 0.5, 2.0, gc);
    ops::normal_(g, 0.5, 2.0, gg);
    // r = sqrt(−2 log u) and r·cos/sin(2πu'): logf, cosf, sinf differ by <= 2 ulp each, a few ulp of the draw n
    // in all; v = 0.5 + 2n, so relative to |v| + 1 (>= |n|) 16 ulp leave a wide margin.
    expect_within_ulps(g, c, 16, 16 * 0x1p-23, "normal_");
    EXPECT_EQ(gg.offset(), gc.offset());
    Tensor ct = Tensor::empty({n}), gt = Tensor::empty({n}, DType::f32, kGpu);
    ops::trunc_normal_(ct, 0, 0.02, -0.04, 0.04, gc);
    ops::trunc_normal_(gt, 0, 0.02, -0.04, 0.04, gg);
    // f64 math (erf, exp, log differ in the last f64 bits) rounded to f32: at most one f32 ulp apart.
    expect_within_ulps(gt, ct, 1.01, 1e-12, "trunc_normal_");
    EXPECT_EQ(gg.offset(), gc.offset());
  }
  // Sample statistics of the device draw.
  Generator g(3);
  Tensor t = Tensor::empty({200000}, DType::f32, kGpu);
  ops::normal_(t, 0, 1, g);
  auto v = t.to(cpu()).to_vector();
  double m = 0, var = 0;
  for (double x : v) m += x / v.size();
  for (double x : v) var += (x - m) * (x - m) / v.size();
  EXPECT_NEAR(m, 0, 0.01);
  EXPECT_NEAR(var, 1, 0.02);
}

TEST(RandomCuda, BernoulliMasksAreIdenticalToCpu) {
  VT_REQUIRE_DEVICE();
  for (int64_t n : kSizes) {
    Generator gc(11), gg(11);
    Tensor c = ops::bernoulli({n}, 0.3, gc), g = ops::bernoulli({n}, 0.3, gg, kGpu);
    ASSERT_TRUE(g.device() == kGpu);
    EXPECT_EQ(bytes_of(g), bytes_of(c)) << n;
    EXPECT_EQ(gg.offset(), gc.offset());
  }
}

TEST(RandomCuda, DropoutMatchesCpuBitForBitWithItsBackward) {
  VT_REQUIRE_DEVICE();
  for (double p : {0.1, 0.5}) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{12288}, int64_t{100003}}) {  // 12288: the vector path
      SCOPED_TRACE("p=" + std::to_string(p) + " n=" + std::to_string(n));
      Tensor x = randn_cpu({n}, 20 + static_cast<uint32_t>(n)), dy = randn_cpu({n}, 21);
      Generator gc(13), gg(13);
      gc.set_state(13, 5);
      gg.set_state(13, 5);
      Tensor xc = x.clone().set_requires_grad(true), xg = x.to(kGpu).detach().set_requires_grad(true);
      Tensor yc = ops::dropout(xc, p, true, gc), yg = ops::dropout(xg, p, true, gg);
      EXPECT_EQ(bytes_of(yg), bytes_of(yc));
      EXPECT_EQ(gg.offset(), gc.offset());
      yc.backward(dy);
      yg.backward(dy.to(kGpu));
      EXPECT_EQ(bytes_of(xg.grad()), bytes_of(xc.grad()));
    }
  }
}

TEST(RandomCuda, DropoutKeepRateAndBf16) {
  VT_REQUIRE_DEVICE();
  const int64_t n = 1 << 20;
  const double p = 0.25;
  Tensor x = Tensor::ones({n}, DType::bf16, kGpu);
  Generator g(17), gc(17);
  Tensor y = ops::dropout(x, p, true, g);
  ASSERT_EQ(y.dtype(), DType::bf16);
  auto v = y.to(cpu()).to_vector();
  const double scaled = static_cast<float>(bf16(static_cast<float>(1 / (1 - p))));  // 1·scale rounded to bf16
  int64_t kept = 0, wrong = 0;
  for (double e : v) kept += e != 0, wrong += e != 0 && e != scaled;
  EXPECT_EQ(wrong, 0);
  // Binomial(n, 0.75): sd = sqrt(n·p·(1−p)) ≈ 443; allow 5 sd.
  EXPECT_NEAR(static_cast<double>(kept), 0.75 * n, 5 * std::sqrt(n * p * (1 - p)));
  // The same zeros as the CPU's f32 dropout for the same state.
  auto vc = ops::dropout(Tensor::ones({n}), p, true, gc).to_vector();
  int64_t mismatched = 0;
  for (int64_t i = 0; i < n; ++i) mismatched += (v[i] == 0) != (vc[i] == 0);
  EXPECT_EQ(mismatched, 0);
}

TEST(RandomCuda, DropPathDropsWholeSamplesLikeCpu) {
  VT_REQUIRE_DEVICE();
  const float kScale = static_cast<float>(1.0 / (1.0 - 0.3));  // as the op computes it
  // inner = 197·65 is odd (scalar kernel); 197·64 is a multiple of 8 (16-byte packs for f32 and bf16).
  for (const Shape& shape : {Shape{64, 197, 65}, Shape{64, 197, 64}}) {
    for (DType dt : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + to_string(shape));
      Tensor x = randn_cpu(shape, 30), dy = randn_cpu(shape, 31);
      Generator gc(19), gg(19);
      Tensor xg = x.to(dt).to(kGpu).detach().set_requires_grad(true);
      Tensor yg = ops::drop_path(xg, 0.3, true, gg);
      Tensor yc = ops::drop_path(x, 0.3, true, gc);
      EXPECT_EQ(gg.offset(), gc.offset());
      auto a = yg.to(cpu()).to_vector(), c = yc.to_vector(), xv = x.to(dt).to_vector();
      const int64_t inner = shape[1] * shape[2];
      int64_t dropped = 0;
      for (int64_t b = 0; b < 64; ++b) {
        const bool cpu_kept = c[b * inner] != 0;  // x is never exactly 0 here
        bool all_zero = true, all_scaled = true;
        for (int64_t j = 0; j < inner; ++j) {
          const double e = a[b * inner + j], want = static_cast<float>(xv[b * inner + j]) * kScale;
          all_zero &= e == 0;
          all_scaled &= dt == DType::f32 ? e == want : std::abs(e - want) <= std::abs(want) * 0x1p-8;
        }
        EXPECT_TRUE(all_zero || all_scaled) << "sample " << b;
        EXPECT_EQ(all_scaled, cpu_kept) << "sample " << b;
        dropped += all_zero;
      }
      EXPECT_GT(dropped, 0);
      EXPECT_LT(dropped, 64);
      if (dt == DType::f32) {
        EXPECT_EQ(bytes_of(yg), bytes_of(yc));
      }
      // Backward: the same whole-sample mask and scale.
      yg.backward(dy.to(dt).to(kGpu));
      auto g = xg.grad().to(cpu()).to_vector(), dyv = dy.to(dt).to_vector();
      for (int64_t b = 0; b < 64; ++b) {
        const bool kept = a[b * inner] != 0;
        const double want = kept ? static_cast<float>(dyv[b * inner + 5]) * kScale : 0.0;
        EXPECT_NEAR(g[b * inner + 5], want, std::abs(want) * 0x1p-8) << "sample " << b;
      }
    }
  }
}

}  // namespace
}  // namespace vt::test
