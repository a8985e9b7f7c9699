// ops::mita_landmark_pool on the GPU against the CPU op in f64 on the same values, forward and the gradient of
// the wide tensor the input is a view of (like q inside the packed qkv [B, N, 3C]): DeiT-S's N = 197 (14×14 → 5×5),
// N = 1025 (32×32 → 7×7), a 1-D N = 4096 → 64 (sequence), and odd cases that take the one-element path (C = 37;
// a misaligned view). f32: the forward sums ≤ 64 rows in f32 and the backward ≤ 4 products, so relative errors
// are a few f32 ulps; we allow 1e-6·max|ref|. bf16: the rule of issue 4 against the f64 reference rounded to bf16
// (the plainest bf16 answer).
#include "cuda/device_test_util.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

struct Case {
  int64_t N, m, C, offset;  // x = wide[:, :, offset : offset + C] of a [B, N, 3C] tensor
  const char* pool;
};
const Case kCases[] = {{197, 25, 384, 0, "shifted"}, {1025, 49, 384, 384, "shifted"}, {4096, 64, 384, 0, "sequence"},
                       {197, 25, 37, 0, "patches"},  {50, 7, 37, 37, "sequence"},     {197, 25, 384, 1, "shifted"}};
constexpr int64_t kB = 2;

struct Layout {
  int64_t first, L, grid;
};
Layout layout_of(const Case& c) {
  if (std::string(c.pool) == "sequence") return {0, c.N, 0};
  const int64_t L = c.N - 1;
  int64_t G = 1;
  while ((G + 1) * (G + 1) <= L) ++G;
  return {std::string(c.pool) == "patches" ? 1 : 0, L, G * G == L ? G : 0};
}

std::string name_of(const Case& c, DType dt) {
  return std::string(c.pool) + " N=" + std::to_string(c.N) + " m=" + std::to_string(c.m) + " C=" + std::to_string(c.C) +
         " offset=" + std::to_string(c.offset) + " " + dtype_name(dt);
}

/// The pooled landmarks and the gradient of the wide tensor for the upstream gradient dout.
struct Result {
  Tensor out, dwide;
};
Result run(const Case& c, const Tensor& wide_in, const Tensor& dout) {
  const Layout lay = layout_of(c);
  Tensor wide = wide_in.detach();
  wide.set_requires_grad(true);
  Tensor out = ops::mita_landmark_pool(wide.slice(2, c.offset, c.offset + c.C), lay.first, lay.L, lay.grid, c.m);
  out.backward(dout);
  return {out.detach(), wide.grad()};
}

void check(DType dt) {
  for (const Case& c : kCases) {
    const std::string what = name_of(c, dt);
    SCOPED_TRACE(what);
    const Tensor wide = randn_cpu({kB, c.N, 3 * c.C}, 17, dt), dout = randn_cpu({kB, c.m, c.C}, 18, dt);
    const Result ref = run(c, wide.to(DType::f64), dout.to(DType::f64));
    const Result gpu = run(c, wide.to(kGpu), dout.to(kGpu));
    ASSERT_EQ(gpu.out.device(), kGpu);
    ASSERT_EQ(gpu.out.dtype(), dt);
    ASSERT_EQ(gpu.dwide.dtype(), dt);
    if (dt == DType::f32) {
      EXPECT_LE(max_abs_diff(gpu.out, ref.out), 1e-6 * max_abs(ref.out)) << what << " forward";
      EXPECT_LE(max_abs_diff(gpu.dwide, ref.dwide), 1e-6 * max_abs(ref.dwide)) << what << " backward";
    } else {
      expect_bf16_rule(gpu.out, ref.out.to(DType::bf16), ref.out, (what + " forward").c_str());
      expect_bf16_rule(gpu.dwide, ref.dwide.to(DType::bf16), ref.dwide, (what + " backward").c_str());
    }
  }
}

TEST(LandmarkPoolCuda, F32MatchesTheCpuOp) {
  VT_REQUIRE_DEVICE();
  check(DType::f32);
}

TEST(LandmarkPoolCuda, Bf16FollowsTheRule) {
  VT_REQUIRE_DEVICE();
  check(DType::bf16);
}

}  // namespace
}  // namespace vt::test
