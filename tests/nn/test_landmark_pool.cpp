// ops::mita_landmark_pool on the CPU: the fused landmark pooling against the composite models::mita_landmarks
// (impl reference: slice → transpose → adaptive pool → transpose, the oracle) in f64, forward and gradient, for
// the three pools, 2-D grids with overlapping bins (14 → 5, 4 → 3) and 1-D; a finite-difference gradcheck on a
// strided input (a channel slice of a wider tensor, like q inside the packed qkv); and the argument errors.
#include <gtest/gtest.h>

#include "autograd/gradcheck.h"
#include "models/mita.h"
#include "ops/ops.h"
#include "tests/nn/mita_test_util.h"

namespace vt::test {
namespace {

struct PoolCase {
  const char* pool;
  int64_t N, m;
};

// 197 → 14×14 grid to 5×5 and 17 → 4×4 to 3×3 (overlapping bins); 20 → 19 tokens, 1-D; sequence 1-D.
const PoolCase kPoolCases[] = {{"shifted", 197, 25}, {"patches", 197, 25}, {"shifted", 17, 9},  {"patches", 17, 9},
                               {"shifted", 20, 6},   {"patches", 20, 7},   {"sequence", 50, 7}, {"sequence", 9, 9}};

TEST(LandmarkPool, ForwardAndGradientEqualTheCompositeOnAStridedView) {
  const int64_t B = 2, C = 6;
  for (const PoolCase& pc : kPoolCases) {
    const std::string what = std::string(pc.pool) + " N=" + std::to_string(pc.N) + " m=" + std::to_string(pc.m);
    models::MitaOptions o = opts(2, pc.m, 1, 1, false, pc.pool, "official");
    Tensor weights = randn_t({B, pc.m, C}, 7);
    std::vector<double> outs[2], grads[2];
    for (int fused = 0; fused < 2; ++fused) {
      o.impl = fused ? "fused" : "reference";
      Tensor qkv = randn_t({B, pc.N, 3 * C}, 3);
      qkv.set_requires_grad(true);
      Tensor q = qkv.slice(2, C, 2 * C);  // row stride 3C, like k inside the packed qkv
      Tensor out = models::mita_landmarks(q, o);
      ASSERT_EQ(out.shape(), Shape({B, pc.m, C})) << what;
      ops::sum(out * weights).backward();
      outs[fused] = out.to_vector();
      grads[fused] = qkv.grad().to_vector();
    }
    // Same sums in the same order for the forward; the backward adds g/|bin| vs g·(1/|bin|): f64 rounding only.
    expect_near_all(outs[1], outs[0], 1e-14, what + " forward");
    expect_near_all(grads[1], grads[0], 1e-14, what + " gradient");
  }
}

TEST(LandmarkPool, FloatMatchesDoubleAndKeepsTheDtype) {
  Tensor x = randn_t({2, 17, 5}, 11);
  Tensor ref = ops::mita_landmark_pool(x, 1, 16, 4, 9);
  Tensor got = ops::mita_landmark_pool(x.to(DType::f32), 1, 16, 4, 9);
  EXPECT_EQ(got.dtype(), DType::f32);
  expect_near_all(got.to_vector(), ref.to_vector(), 1e-6, "f32 forward");  // f64 sums rounded once to f32
}

TEST(LandmarkPool, GradcheckOnAStridedInput) {
  struct G {
    int64_t first, L, grid, m;
  };
  // 2-D 3×3 → 2×2 (overlapping), 2-D with m = 1, 1-D 9 → 4, 1-D with more bins than tokens (7 → 10).
  const G cases[] = {{1, 9, 3, 4}, {0, 9, 3, 1}, {0, 9, 0, 4}, {2, 7, 0, 10}};
  for (const G& c : cases) {
    auto fn = [&](const std::vector<Tensor>& in) {
      return ops::mita_landmark_pool(in[0].slice(2, 2, 5), c.first, c.L, c.grid, c.m);  // [2, 10, 3] view
    };
    GradcheckResult r = gradcheck(fn, {randn_t({2, 10, 8}, 5)});
    EXPECT_TRUE(r.ok) << "first " << c.first << " L " << c.L << " grid " << c.grid << " m " << c.m << ": " << r.detail;
  }
}

TEST(LandmarkPool, NonContiguousChannelsAreCopied) {
  Tensor x = randn_t({2, 6, 10}, 9);
  Tensor t = x.transpose(1, 2);  // [2, 10, 6] with channel stride 10
  expect_near_all(ops::mita_landmark_pool(t, 0, 10, 0, 3).to_vector(),
                  ops::mita_landmark_pool(t.contiguous(), 0, 10, 0, 3).to_vector(), 0, "transposed input");
}

TEST(LandmarkPool, BadSizesAreClearErrors) {
  Tensor x = randn_t({2, 10, 4}, 1);
  const std::string op = "[mita_landmark_pool]";
  expect_error([&] { ops::mita_landmark_pool(x, 2, 9, 3, 4); }, op + " tokens [2, 11) do not fit");
  expect_error([&] { ops::mita_landmark_pool(x, 0, 8, 3, 4); }, op + " a 3x3 grid needs L = 9");
  expect_error([&] { ops::mita_landmark_pool(x, 1, 9, 3, 5); }, op + " 2-D pooling needs m = p²");
  expect_error([&] { ops::mita_landmark_pool(x, 0, 10, 0, 0); }, op + " needs at least one landmark");
  expect_error([&] { ops::mita_landmark_pool(randn_t({10, 4}, 1), 0, 10, 0, 2); }, op + " x must be [B, N, C]");
  expect_error([&] { ops::mita_landmark_pool(x.to(DType::i32), 0, 10, 0, 2); }, op + " CPU needs f32 or f64");
}

}  // namespace
}  // namespace vt::test
