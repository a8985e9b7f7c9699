// Random fills and stochastic regularisers: reproducibility from (seed, offset), sample statistics on 10^5
// draws, truncation bounds, dropout/drop_path masks, scaling and gradients, and p validation.
#include <algorithm>
#include <cmath>

#include "ops/op_harness.h"

namespace vt::test {
namespace {

struct Stats {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};

Stats stats(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x / v.size(), s.min = std::min(s.min, x), s.max = std::max(s.max, x);
  for (double x : v) s.var += (x - s.mean) * (x - s.mean) / v.size();
  return s;
}

constexpr int64_t kN = 100000;

TEST(Random, SameSeedSameValuesAndOffsetsAdvance) {
  Generator g1(42), g2(42), g3(43);
  Tensor a = Tensor::empty({kN}), b = Tensor::empty({kN}), c = Tensor::empty({kN}), d = Tensor::empty({kN});
  ops::uniform_(a, 0, 1, g1);
  ops::uniform_(b, 0, 1, g2);
  ops::uniform_(c, 0, 1, g3);
  ops::uniform_(d, 0, 1, g1);  // same generator again: a later offset
  EXPECT_EQ(a.to_vector(), b.to_vector());
  EXPECT_NE(a.to_vector(), c.to_vector());
  EXPECT_NE(a.to_vector(), d.to_vector());
  EXPECT_EQ(g1.offset(), 2 * kN / 4);
  // Element i of a draw is rng::uniform_at(seed, offset, i), whatever the thread split.
  Generator g4(7);
  g4.set_state(7, 1000);
  Tensor e = Tensor::empty({kN}, DType::f64);
  ops::uniform_(e, -2, 3, g4);
  auto ev = e.to_vector();
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{4097}, kN - 1})
    EXPECT_DOUBLE_EQ(ev[i], -2 + 5 * static_cast<double>(rng::uniform_at(7, 1000, i))) << i;
}

TEST(Random, UniformMeanAndVariance) {
  Generator g(1);
  Tensor t = Tensor::empty({kN}, DType::f64);
  ops::uniform_(t, -2, 3, g);
  Stats s = stats(t.to_vector());
  EXPECT_NEAR(s.mean, 0.5, 0.03);
  EXPECT_NEAR(s.var, 25.0 / 12.0, 0.05);
  EXPECT_GE(s.min, -2);
  EXPECT_LT(s.max, 3);
}

TEST(Random, NormalMeanAndStd) {
  Generator g(2);
  Tensor t = Tensor::empty({kN});
  ops::normal_(t, 0, 1, g);
  Stats s = stats(t.to_vector());
  EXPECT_NEAR(s.mean, 0, 0.02);
  EXPECT_NEAR(std::sqrt(s.var), 1, 0.02);
  Tensor u = Tensor::empty({kN + 1}, DType::f64);  // odd count
  ops::normal_(u, 1.5, 2, g);
  s = stats(u.to_vector());
  EXPECT_NEAR(s.mean, 1.5, 0.04);
  EXPECT_NEAR(std::sqrt(s.var), 2, 0.04);
}

TEST(Random, TruncNormalRespectsBoundsAndMatchesTimmInit) {
  Generator g(3);
  // timm's trunc_normal_(std=0.02, a=-2, b=2): bounds ±100σ, so effectively N(0, 0.02²).
  Tensor w = Tensor::empty({kN});
  ops::trunc_normal_(w, 0, 0.02, -2, 2, g);
  Stats s = stats(w.to_vector());
  EXPECT_NEAR(s.mean, 0, 0.001);
  EXPECT_NEAR(std::sqrt(s.var), 0.02, 0.0005);
  EXPECT_GE(s.min, -2);
  EXPECT_LE(s.max, 2);
  // Tight bounds: N(0, 1) on [−0.5, 1] has mean (φ(−0.5) − φ(1)) / (Φ(1) − Φ(−0.5)).
  Tensor t = Tensor::empty({kN}, DType::f64);
  ops::trunc_normal_(t, 0, 1, -0.5, 1, g);
  s = stats(t.to_vector());
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  auto Phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  EXPECT_NEAR(s.mean, (phi(-0.5) - phi(1)) / (Phi(1) - Phi(-0.5)), 0.01);
  EXPECT_GE(s.min, -0.5);
  EXPECT_LE(s.max, 1);
  EXPECT_LT(s.min, -0.49);
  EXPECT_GT(s.max, 0.99);
}

TEST(Random, FillsNonContiguousAndBf16Views) {
  Generator g(4), h(4);
  Tensor base = Tensor::zeros({6, 7});
  Tensor view = base.transpose(0, 1);  // [7, 6], not contiguous
  ops::uniform_(view, 0, 1, g);
  auto v = view.to_vector();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_FLOAT_EQ(v[i], rng::uniform_at(4, 0, i)) << i;
  Tensor b16 = Tensor::empty({1000}, DType::bf16);
  ops::normal_(b16, 0, 1, h);
  EXPECT_NEAR(stats(b16.to_vector()).mean, 0, 0.15);
  EXPECT_THROW(ops::uniform_(Tensor::empty({3}, DType::i64), 0, 1, g), Error);
}

TEST(Random, BernoulliFraction) {
  Generator g(5);
  Tensor m = ops::bernoulli({kN}, 0.3, g);
  EXPECT_EQ(m.dtype(), DType::u8);
  auto v = m.to_vector();
  for (double x : v) ASSERT_TRUE(x == 0 || x == 1);
  EXPECT_NEAR(stats(v).mean, 0.3, 0.01);
  EXPECT_THROW(ops::bernoulli({3}, 1.5, g), Error);
}

TEST(Random, DropoutKeepsFractionScalesAndIsIdentityWhenOff) {
  Generator g(6);
  Tensor x = Tensor::ones({kN});
  auto y = ops::dropout(x, 0.3, true, g).to_vector();
  int64_t kept = 0;
  for (double v : y) {
    if (v != 0) {
      ++kept;
      ASSERT_FLOAT_EQ(v, 1 / 0.7);
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / kN, 0.7, 0.01);
  EXPECT_TRUE(ops::dropout(x, 0.3, false, g).same(x));
  EXPECT_TRUE(ops::dropout(x, 0.0, true, g).same(x));
}

TEST(Random, DropoutGradientIsMaskTimesScale) {
  Tensor x = random_tensor({37, 11}, 7, 0.5, 1.5).set_requires_grad(true);
  Tensor w = random_tensor({37, 11}, 8);
  Generator g(9);
  Tensor y = ops::dropout(x, 0.4, true, g);
  ops::sum(y * w).backward();
  auto yv = y.to_vector(), wv = w.to_vector(), gv = x.grad().to_vector();
  for (size_t i = 0; i < yv.size(); ++i) EXPECT_NEAR(gv[i], yv[i] != 0 ? wv[i] / 0.6 : 0.0, 1e-12) << i;
  // With a fixed generator state the op is deterministic, so gradcheck applies too.
  OpCase c;
  c.name = "dropout";
  c.inputs = {random_tensor({7, 5}, 10)};
  c.fn = [](const std::vector<Tensor>& in) {
    Generator fixed(11);
    return ops::dropout(in[0], 0.5, true, fixed);
  };
  run_op_case(c);
}

TEST(Random, DropPathDropsWholeSamples) {
  const int64_t B = 2000, inner = 15;
  Tensor x = random_tensor({B, 3, 5}, 12, 0.5, 1.5).set_requires_grad(true);
  Generator g(13);
  Tensor y = ops::drop_path(x, 0.25, true, g);
  auto xv = x.to_vector(), yv = y.to_vector();
  int64_t kept = 0;
  for (int64_t b = 0; b < B; ++b) {
    const bool keep = yv[b * inner] != 0;
    kept += keep;
    for (int64_t j = 0; j < inner; ++j)
      ASSERT_NEAR(yv[b * inner + j], keep ? xv[b * inner + j] / 0.75 : 0.0, 1e-12) << b << " " << j;
  }
  EXPECT_NEAR(static_cast<double>(kept) / B, 0.75, 0.03);
  ops::sum(y).backward();
  auto gv = x.grad().to_vector();
  for (int64_t i = 0; i < B * inner; ++i) ASSERT_NEAR(gv[i], yv[i] != 0 ? 1 / 0.75 : 0.0, 1e-12) << i;
  EXPECT_TRUE(ops::drop_path(x, 0.25, false, g).same(x));
  EXPECT_TRUE(ops::drop_path(x, 0.0, true, g).same(x));
}

TEST(Random, DropProbabilityOutOfRangeThrows) {
  Tensor x = Tensor::ones({4, 3});
  for (double p : {-0.1, 1.0, 1.5}) {
    for (bool training : {true, false}) {
      try {
        ops::dropout(x, p, training);
        ADD_FAILURE() << "dropout accepted p = " << p;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[dropout]"), std::string::npos) << e.what();
      }
      try {
        ops::drop_path(x, p, training);
        ADD_FAILURE() << "drop_path accepted p = " << p;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[drop_path]"), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace vt::test
