// The MiTA core (models/mita.h): forward against an independent brute-force reference (mita_reference.h), the
// dense-attention (non-)equivalences of spec §9, a hand-checked teaching example and the landmark pooling bins.
// The layer (gradchecks, DWC, Gate, parameters, config) is tested in test_mita_layer.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "models/mita.h"
#include "ops/ops.h"
#include "tests/nn/mita_test_util.h"

namespace vt::test {
namespace {

using models::MitaDebug;
using models::MitaOptions;

// ---- forward against the brute-force reference ----

TEST(MitaCore, MatchesBruteForceReference) {
  struct Case {
    int64_t N;
    MitaOptions o;
  };
  const std::vector<Case> cases = {
      {12, opts(3, 3, 4, 1, false, "shifted", "official")},   // 11 tokens: 1-D pooling
      {12, opts(3, 5, 12, 2, false, "patches", "paper")},     // 1-D, k = N, top-2 routing
      {17, opts(3, 4, 5, 1, false, "shifted", "official")},   // 4x4 grid → 2x2
      {17, opts(3, 9, 6, 2, false, "patches", "official")},   // 4x4 → 3x3: overlapping bins
      {17, opts(3, 9, 7, 1, true, "shifted", "official")},    // route-only
      {50, opts(3, 9, 10, 1, false, "shifted", "paper")},     // 7x7 → 3x3
      {50, opts(3, 16, 8, 2, false, "shifted", "official")},  // 7x7 → 4x4
      {50, opts(3, 4, 20, 2, true, "patches", "paper")},
  };
  const int64_t B = 2, C = 12;
  uint64_t seed = 100;
  for (const Case& c : cases) {
    const std::string name = "N=" + std::to_string(c.N) + " m=" + std::to_string(c.o.m) +
                             " k=" + std::to_string(c.o.k) + " s=" + std::to_string(c.o.s) +
                             (c.o.route_only ? " route" : "") + " " + c.o.landmark_pool + " " + c.o.shared_scale;
    const Shape shape{B, c.N, C};
    auto q = randn(B * c.N * C, seed++), k = randn(B * c.N * C, seed++), v = randn(B * c.N * C, seed++);
    const auto expected = mita_ref::mita(q, k, v, B, c.N, C, ref_opts(c.o));
    for (DType dt : {DType::f64, DType::f32}) {
      Tensor out = models::mita_core(Tensor::from_vector(q, shape, dt), Tensor::from_vector(k, shape, dt),
                                     Tensor::from_vector(v, shape, dt), c.o);
      EXPECT_EQ(out.shape(), shape) << name;
      EXPECT_EQ(out.dtype(), dt) << name;
      expect_near_all(out.to_vector(), expected, dt == DType::f64 ? 1e-12 : 2e-5, name + " " + dtype_name(dt));
    }
  }
}

// Compress-only (Appendix A's ablation): softmax(q·r_j·shared_scale) over the m landmarks, values
// V̂_j = Σ_n softmax_n(r_j·k_n/√d) v_n, computed here by loops from the model's own landmarks.
TEST(MitaCore, CompressOnlyIsTheSharedBranchAlone) {
  const int64_t B = 2, N = 17, C = 12, H = 3, d = C / H;
  const Shape shape{B, N, C};
  auto q = randn(B * N * C, 41), k = randn(B * N * C, 42), v = randn(B * N * C, 43);
  for (const char* scale : {"official", "paper"}) {
    MitaOptions o = opts(H, 4, 5, 1, false, "shifted", scale);
    o.compress_only = true;
    const Tensor tq = Tensor::from_vector(q, shape, DType::f64);
    const auto R = models::mita_landmarks(tq, o).to_vector();  // [B, m, C]
    const double s_key = 1.0 / std::sqrt(double(d)), s_shared = std::string(scale) == "official" ? 1.0 / d : s_key;
    std::vector<double> expected(q.size());
    auto at = [&](const std::vector<double>& t, int64_t b, int64_t n, int64_t rows, int64_t h, int64_t i) {
      return t[static_cast<size_t>((b * rows + n) * C + h * d + i)];
    };
    auto softmax = [](std::vector<double> x) {
      double mx = *std::max_element(x.begin(), x.end()), sum = 0;
      for (double& e : x) sum += (e = std::exp(e - mx));
      for (double& e : x) e /= sum;
      return x;
    };
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h) {
        std::vector<std::vector<double>> vhat(4, std::vector<double>(d, 0.0));
        for (int64_t j = 0; j < 4; ++j) {
          std::vector<double> logits(N);
          for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < d; ++i) logits[n] += at(R, b, j, 4, h, i) * at(k, b, n, N, h, i) * s_key;
          const auto w = softmax(logits);
          for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < d; ++i) vhat[j][i] += w[n] * at(v, b, n, N, h, i);
        }
        for (int64_t n = 0; n < N; ++n) {
          std::vector<double> logits(4);
          for (int64_t j = 0; j < 4; ++j)
            for (int64_t i = 0; i < d; ++i) logits[j] += at(q, b, n, N, h, i) * at(R, b, j, 4, h, i) * s_shared;
          const auto w = softmax(logits);
          for (int64_t i = 0; i < d; ++i) {
            double sum = 0;
            for (int64_t j = 0; j < 4; ++j) sum += w[j] * vhat[j][i];
            expected[static_cast<size_t>((b * N + n) * C + h * d + i)] = sum;
          }
        }
      }
    const Tensor out =
        models::mita_core(tq, Tensor::from_vector(k, shape, DType::f64), Tensor::from_vector(v, shape, DType::f64), o);
    expect_near_all(out.to_vector(), expected, 1e-12, std::string("compress-only ") + scale);
  }
}

// ---- relation to dense attention (spec §9 note) ----

TEST(MitaCore, RouteOnlyWithAllKeysIsDenseButFullMitaIsNot) {
  const int64_t B = 2, N = 12, C = 12, H = 3;
  const Shape shape{B, N, C};
  auto q = randn(B * N * C, 1), k = randn(B * N * C, 2), v = randn(B * N * C, 3);
  const auto dense = mita_ref::dense(q, k, v, B, N, C, H);
  Tensor tq = Tensor::from_vector(q, shape, DType::f64), tk = Tensor::from_vector(k, shape, DType::f64),
         tv = Tensor::from_vector(v, shape, DType::f64);
  // Route-only, k = N: every expert holds all keys, so each query's softmax is the dense row.
  expect_near_all(models::mita_core(tq, tk, tv, opts(H, 3, N, 1, true, "shifted", "official")).to_vector(), dense,
                  1e-12, "route-only k=N");
  // Full MiTA with m = k = N: the shared slots stay in the softmax, so it differs from dense.
  for (const char* scale : {"official", "paper"})
    EXPECT_GT(max_abs_diff(models::mita_core(tq, tk, tv, opts(H, N, N, 1, false, "shifted", scale)).to_vector(), dense),
              1e-2)
        << scale;
}

// The scalar counterexample: d = 1, N = 2, Q = K = V = [1, 0]. Dense attention for the query q = 1 is
// σ(1) = e/(e+1) = 0.7311. MiTA with m = k = N = 2 and the landmarks equal to the queries (r = [1, 0], as if every
// token had its own pooling bin) routes q = 1 to expert 0 (gate [1, 0]), whose top-2 keys are both keys, so the
// routed part alone is the dense row; but the joint softmax also holds the shared slots: logits [q·r0, q·r1] =
// [1, 0] with values V̂ = [σ(1), 1/2]. Output = (e·σ(1) + 1·½ + e·1 + 1·0) / (e + 1 + e + 1) = 0.69999 ≈ 0.7000.
// With d = 1 the official 1/d and the paper's 1/√d shared scale coincide.
TEST(MitaCore, ScalarCounterexampleDenseVsMita) {
  Tensor x = Tensor::from_vector({1.0, 0.0}, {1, 2, 1}, DType::f64);
  const double e = std::exp(1.0), sigma = e / (e + 1);
  const auto dense = mita_ref::dense(x.to_vector(), x.to_vector(), x.to_vector(), 1, 2, 1, 1);
  EXPECT_NEAR(dense[0], 0.7311, 1e-4);
  for (const char* scale : {"official", "paper"}) {
    const auto out = models::mita_core_with_landmarks(x, x, x, x, opts(1, 2, 2, 1, false, "shifted", scale));
    EXPECT_NEAR(out.to_vector()[0], 0.7000, 1e-4) << scale;
    EXPECT_NEAR(out.to_vector()[0], (e * sigma + 0.5 + e) / (2 * e + 2), 1e-14) << scale;
    const auto route = models::mita_core_with_landmarks(x, x, x, x, opts(1, 2, 2, 1, true, "shifted", scale));
    EXPECT_NEAR(route.to_vector()[0], dense[0], 1e-14) << scale;
  }
}

// ---- teaching example ----

// N = 8 tokens (drawn as a 2x4 grid in the lesson), d = C = 2, one head, m = 2 experts with k = 3 keys each.
// Shifted pooling takes tokens 0..6; 7 is not a square, so they pool 1-D into the overlapping bins [0,4) and [3,7):
// r0 = mean(q0..q3) = (1, 0), r1 = mean(q3..q6) = (0, 1). Expert 0 takes the 3 keys with the largest x, expert 1
// the largest y; key 1 = (2, 2) is in both (experts overlap). Queries 0..3 route to expert 0 (q3 = 0 ties both
// gates: first index), 4..7 to expert 1. Each query reads exactly m + k = 5 slots.
TEST(MitaCore, TeachingExampleOverlappingExpertsAndSlotCounts) {
  const double t = 4.0 / 3;
  Tensor q = Tensor::from_vector({t, 0, t, 0, t, 0, 0, 0, 0, t, 0, t, 0, t, 0.5, 0.9}, {1, 8, 2}, DType::f64);
  Tensor k = Tensor::from_vector({3, 0, 2, 2, 2.5, -1, 0, 3, -1, 2.5, 0.5, 0.5, -2, -2, 1, 1}, {1, 8, 2}, DType::f64);
  Tensor v = randn_t({1, 8, 2}, 77);
  MitaDebug dbg;
  Tensor out = models::mita_core(q, k, v, opts(1, 2, 3, 1, false, "shifted", "official"), &dbg);
  expect_near_all(dbg.landmarks.to_vector(), {1, 0, 0, 1}, 1e-15, "landmarks");
  EXPECT_EQ(dbg.expert_keys.to_vector(), (std::vector<double>{0, 2, 1, 3, 4, 1}));
  EXPECT_EQ(dbg.experts.to_vector(), (std::vector<double>{0, 0, 0, 0, 1, 1, 1, 1}));
  const auto ek = dbg.expert_keys.to_vector(), rk = dbg.routed_keys.to_vector();
  ASSERT_EQ(dbg.weights.shape(), (Shape{1, 1, 8, 5}));
  const auto w = dbg.weights.to_vector(), vv = v.to_vector(), kv = k.to_vector();
  // V̂_j = softmax_n(r_j · k_n / √2) v_n, by hand.
  double vhat[2][2] = {};
  for (int j = 0; j < 2; ++j) {
    double z = 0, acc[2] = {0, 0};
    for (int n = 0; n < 8; ++n) {
      const double a = std::exp(kv[2 * n + j] / std::sqrt(2.0));  // r_j is the unit vector e_j
      z += a, acc[0] += a * vv[2 * n], acc[1] += a * vv[2 * n + 1];
    }
    vhat[j][0] = acc[0] / z, vhat[j][1] = acc[1] / z;
  }
  const auto o = out.to_vector(), qv = q.to_vector();
  const int sets[2][3] = {{0, 2, 1}, {3, 4, 1}};
  for (int n = 0; n < 8; ++n) {
    const int e = n < 4 ? 0 : 1;
    // One softmax over 5 logits: shared q·r_j / d (official scale, d = 2), routed q·k_i / √d.
    double logit[5], z = 0;
    for (int j = 0; j < 2; ++j) logit[j] = qv[2 * n + j] / 2.0;
    for (int i = 0; i < 3; ++i) {
      const int key = sets[e][i];
      logit[2 + i] = (qv[2 * n] * kv[2 * key] + qv[2 * n + 1] * kv[2 * key + 1]) / std::sqrt(2.0);
    }
    for (double l : logit) z += std::exp(l);
    for (int slot = 0; slot < 5; ++slot)
      EXPECT_NEAR(w[n * 5 + slot], std::exp(logit[slot]) / z, 1e-14) << "query " << n << " slot " << slot;
    int nonzero = 0;
    double sum = 0, rec[2] = {0, 0};
    for (int slot = 0; slot < 5; ++slot) {
      const double wt = w[n * 5 + slot];
      nonzero += wt > 0;
      sum += wt;
      for (int c = 0; c < 2; ++c)
        rec[c] += wt * (slot < 2 ? vhat[slot][c] : vv[2 * static_cast<int>(rk[n * 3 + slot - 2]) + c]);
    }
    for (int i = 0; i < 3; ++i) EXPECT_EQ(rk[n * 3 + i], ek[e * 3 + i]) << "query " << n;
    EXPECT_EQ(nonzero, 5) << "query " << n;
    EXPECT_NEAR(sum, 1.0, 1e-14) << "query " << n;
    // The output is exactly the weighted sum of those 5 slots' values.
    EXPECT_NEAR(o[2 * n], rec[0], 1e-14) << "query " << n;
    EXPECT_NEAR(o[2 * n + 1], rec[1], 1e-14) << "query " << n;
  }
}

// ---- landmark pooling ----

// PyTorch AdaptiveAvgPool bins from spec §2.2, hard-coded.
const std::vector<std::pair<int, int>> kBins14to5 = {{0, 3}, {2, 6}, {5, 9}, {8, 12}, {11, 14}};
const std::vector<std::pair<int, int>> kBins32to7 = {{0, 5}, {4, 10}, {9, 14}, {13, 19}, {18, 23}, {22, 28}, {27, 32}};
const std::vector<std::pair<int, int>> kBins40to7 = {{0, 6}, {5, 12}, {11, 18}, {17, 23}, {22, 29}, {28, 35}, {34, 40}};

void check_landmarks(int64_t G, const std::vector<std::pair<int, int>>& bins, const std::string& pool, int64_t C) {
  const int64_t N = G * G + 1, p = static_cast<int64_t>(bins.size()), first = pool == "shifted" ? 0 : 1;
  Tensor q = randn_t({1, N, C}, 300 + G);
  const auto qv = q.to_vector();
  MitaOptions o = opts(1, p * p, 1, 1, false, pool, "official");
  const auto got = models::mita_landmarks(q, o).to_vector();
  for (int64_t a = 0; a < p; ++a)
    for (int64_t b = 0; b < p; ++b)
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0;
        int count = 0;
        for (int r = bins[a].first; r < bins[a].second; ++r)
          for (int col = bins[b].first; col < bins[b].second; ++col, ++count) sum += qv[(first + r * G + col) * C + c];
        ASSERT_NEAR(got[(a * p + b) * C + c], sum / count, 1e-12)
            << "G=" << G << " " << pool << " landmark (" << a << "," << b << ") channel " << c;
      }
}

TEST(MitaLandmarks, AdaptiveBinsOnTheShiftedAndPatchGrids) {
  check_landmarks(14, kBins14to5, "shifted", 3);  // DeiT: N = 197, m = 25
  check_landmarks(14, kBins14to5, "patches", 3);
  check_landmarks(32, kBins32to7, "shifted", 1);  // Segmenter 512: N = 1025, m = 49
  check_landmarks(40, kBins40to7, "shifted", 1);  // Segmenter 640: N = 1601, m = 49
}

TEST(MitaLandmarks, ShiftedPoolingIncludesClsAndDropsTheLastToken) {
  Tensor q = randn_t({1, 197, 2}, 9);
  MitaOptions o = opts(1, 25, 1, 1, false, "shifted", "official");
  const auto base = models::mita_landmarks(q, o).to_vector();
  Tensor q2 = q.clone();
  q2.slice(1, 196, 197).fill_(100.0);  // the last patch token: excluded
  EXPECT_EQ(models::mita_landmarks(q2, o).to_vector(), base);
  Tensor q3 = q.clone();
  q3.slice(1, 0, 1).fill_(100.0);  // CLS: cell (0,0), only in landmark 0's bin
  const auto moved = models::mita_landmarks(q3, o).to_vector();
  EXPECT_NE(moved[0], base[0]);
  for (size_t i = 2; i < base.size(); ++i) EXPECT_EQ(moved[i], base[i]) << i;
}

// Appendix A's random landmarks: each landmark is the query of one patch token (never CLS), m distinct tokens,
// redrawn at the next forward; the whole MiTA core trains through them.
TEST(MitaLandmarks, RandomPicksDistinctPatchTokensAfreshEachForward) {
  const int64_t N = 50, m = 9;
  std::vector<double> values(static_cast<size_t>(N));
  for (int64_t t = 0; t < N; ++t) values[static_cast<size_t>(t)] = static_cast<double>(t);
  const Tensor q = Tensor::from_vector(values, {1, N, 1}, DType::f64);  // token t's query is t
  MitaOptions o = opts(1, m, m, 1, false, "random", "official");
  auto draw = [&] {
    std::vector<double> r = models::mita_landmarks(q, o).to_vector();
    std::sort(r.begin(), r.end());
    return r;
  };
  const std::vector<double> first = draw(), second = draw();
  ASSERT_EQ(first.size(), static_cast<size_t>(m));
  EXPECT_EQ(std::adjacent_find(first.begin(), first.end()), first.end()) << "a token picked twice";
  EXPECT_GE(first.front(), 1.0) << "CLS picked";
  EXPECT_LE(first.back(), static_cast<double>(N - 1));
  EXPECT_NE(first, second) << "the same tokens twice in a row (1 chance in C(49, 9))";

  Tensor x = randn_t({2, N, 4}, 3);
  x.set_requires_grad(true);
  MitaOptions o4 = opts(2, m, m, 1, false, "random", "official");
  Tensor out = models::mita_core(x, x, x, o4);
  ops::sum(out).backward();
  ASSERT_TRUE(x.grad().defined());
  double norm = 0;
  for (double g : x.grad().to_vector()) norm += g * g;
  EXPECT_GT(norm, 0.0);
}

}  // namespace
}  // namespace vt::test
