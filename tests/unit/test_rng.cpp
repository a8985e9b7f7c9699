// Philox counter-based RNG: the published known-answer vector, reproducibility from (seed, offset), independence
// of seeds and counters, the Generator's counter reservation, and the distributions of uniform/normal draws.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/rng.h"

namespace vt {
namespace {

TEST(Philox, KnownAnswerFromRandom123) {
  // Random123's kat_vectors: philox4x32 10 rounds, counter {0,0,0,0}, key {0,0}.
  rng::U32x4 r = rng::philox4x32(0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
}

TEST(Philox, SameSeedAndOffsetGiveSameNumbers) {
  for (uint64_t seed : {0ull, 42ull, 0x123456789abcdefull})
    for (uint64_t i = 0; i < 1000; ++i) {
      ASSERT_EQ(rng::bits_at(seed, 17, i), rng::bits_at(seed, 17, i));
      ASSERT_EQ(rng::uniform_at(seed, 17, i), rng::uniform_at(seed, 17, i));
    }
}

TEST(Philox, LanesAndOffsetsTileTheCounterSpace) {
  // Element i of a draw at `offset` is lane i%4 of counter offset + i/4, so a draw shifted by one counter
  // is the same stream shifted by four elements: draws reserved back to back never overlap.
  const uint64_t seed = 7;
  for (uint64_t i = 0; i < 64; ++i) {
    EXPECT_EQ(rng::bits_at(seed, 3, i), rng::philox4x32(seed, 3 + i / 4).v[i % 4]);
    EXPECT_EQ(rng::bits_at(seed, 4, i), rng::bits_at(seed, 3, i + 4));
  }
}

TEST(Philox, DistinctSeedsAndCountersDiffer) {
  // Collisions among 32-bit outputs should be essentially absent (expected ~0.002 for 4096 values).
  std::set<uint32_t> seen;
  for (uint64_t seed : {0ull, 1ull, 2ull, 1ull << 32})
    for (uint64_t i = 0; i < 1024; ++i) seen.insert(rng::bits_at(seed, 0, i));
  EXPECT_GE(seen.size(), 4096u - 1);
  // Seeds that differ only in the high word still give different streams.
  int equal = 0;
  for (uint64_t i = 0; i < 256; ++i) equal += rng::bits_at(5, 0, i) == rng::bits_at(5 + (1ull << 32), 0, i);
  EXPECT_LE(equal, 1);
  // Counters above 2^32 are distinct too.
  equal = 0;
  for (uint64_t i = 0; i < 256; ++i) equal += rng::bits_at(5, 0, i) == rng::bits_at(5, 1ull << 32, i);
  EXPECT_LE(equal, 1);
}

TEST(Generator, ReserveAdvancesByWholeCounters) {
  Generator g(99);
  EXPECT_EQ(g.seed(), 99u);
  EXPECT_EQ(g.offset(), 0u);
  EXPECT_EQ(g.reserve(10), 0u);  // 10 values need 3 counters of 4
  EXPECT_EQ(g.offset(), 3u);
  EXPECT_EQ(g.reserve(1), 3u);
  EXPECT_EQ(g.reserve(4), 4u);
  EXPECT_EQ(g.reserve(0), 5u);
  EXPECT_EQ(g.offset(), 5u);
  // Two successive draws do not share any counter: the second starts past the last one the first used.
  Generator h(1);
  const uint64_t a = h.reserve(197), b = h.reserve(197);
  EXPECT_GE(b, a + (197 - 1) / 4 + 1);
  std::set<uint32_t> first;
  for (uint64_t i = 0; i < 197; ++i) first.insert(rng::bits_at(1, a, i));
  for (uint64_t i = 0; i < 197; ++i) EXPECT_EQ(first.count(rng::bits_at(1, b, i)), 0u) << i;
  // Saving (seed, offset) resumes the stream.
  Generator r(0);
  r.set_state(h.seed(), a);
  EXPECT_EQ(r.reserve(197), a);
  EXPECT_EQ(r.reserve(197), b);
}

TEST(Uniform, StaysInOpenUnitIntervalWithUniformMoments) {
  const int n = 200000;
  double sum = 0, sq = 0;
  std::vector<int> bins(10, 0);
  float lo = 1, hi = 0;
  for (int i = 0; i < n; ++i) {
    float u = rng::uniform_at(2024, 11, i);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sq += static_cast<double>(u) * u;
    ++bins[std::min(9, static_cast<int>(u * 10))];
  }
  EXPECT_GT(lo, 0.0f);
  EXPECT_LT(hi, 1.0f);
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.004);  // about 5 sd (0.00065) each
  EXPECT_NEAR(var, 1.0 / 12.0, 0.0015);
  for (int b = 0; b < 10; ++b) EXPECT_NEAR(bins[b], n / 10, 700) << "bin " << b;
}

TEST(Uniform, TopBitPatternsStayBelowOne) {
  // uniform_at maps the top 24 bits to (k + 0.5) / 2^24. For k = 2^24 - 1 that sum is not representable in
  // float and rounds up to 1. Philox gives such bits at seed 0, counter 2330056, lane 2 (0xffffff45), found by
  // scanning the first 2^26 counters; the result must still be < 1.
  ASSERT_EQ(rng::philox4x32(0, 2330056).v[2] >> 8, 0xffffffu);
  const float u = rng::uniform_at(0, 2330056, 2);
  EXPECT_LT(u, 1.0f);
  EXPECT_GT(u, 0.9999f);
  // And the smallest bit pattern gives the smallest value, still above 0.
  EXPECT_GT(rng::uniform_at(0, 0, 0), 0.0f);
}

TEST(Normal, MomentsOfBoxMuller) {
  const int n = 200000;
  double sum = 0, sq = 0, within1 = 0;
  for (int i = 0; i < n; ++i) {
    double z = rng::normal_at(31, 0, i);
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sq += z * z;
    within1 += std::abs(z) < 1.0;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.012);  // about 5 sd each
  EXPECT_NEAR(sq / n, 1.0, 0.016);
  EXPECT_NEAR(within1 / n, 0.6826894921370859, 0.006);
}

TEST(TruncNormal, StaysInBoundsWithTheRightSpread) {
  const int n = 50000;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    double x = rng::trunc_normal_at(5, 0, i, 0.0, 1.0, -2.0, 2.0);
    ASSERT_GE(x, -2.0);
    ASSERT_LE(x, 2.0);
    sum += x;
    sq += x * x;
  }
  // Variance of N(0,1) truncated to [-2, 2]: 1 - 2·2·φ(2)/(2Φ(2)-1) = 0.7737413. Tolerances are ~5 sd.
  EXPECT_NEAR(sum / n, 0.0, 0.02);
  EXPECT_NEAR(sq / n, 0.7737413, 0.025);
  EXPECT_NEAR(rng::erfinv(std::erf(0.3)), 0.3, 1e-9);
  EXPECT_NEAR(rng::erfinv(std::erf(-2.5)), -2.5, 1e-9);
}

}  // namespace
}  // namespace vt
