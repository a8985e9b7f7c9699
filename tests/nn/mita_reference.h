// Brute-force MiTA in plain loops over doubles, written from docs/mita-spec.md §2 independently of
// models/mita.cpp: its own pooling bins, top-k, arg-max routing, and per query an explicit K* = [Q̃; K_I],
// V* = [V̂; V_I] with one softmax. Also plain dense softmax attention. All tensors are flat row-major [B, N, C].
#pragma once
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace vt::test::mita_ref {

using Vec = std::vector<double>;

struct Opts {
  int64_t heads = 1, m = 1, k = 1, s = 1;
  bool route_only = false;
  std::string pool = "shifted", scale = "official";
};

/// PyTorch adaptive-pooling bin i of `out` over `in`: [floor(i·in/out), ceil((i+1)·in/out)).
inline std::pair<int64_t, int64_t> bin(int64_t i, int64_t in, int64_t out) {
  return {i * in / out, ((i + 1) * in + out - 1) / out};
}

/// Landmarks [B, m, C]: mean of the bin's tokens (shifted: tokens 0..N-2, patches: 1..N-1; 2-D if N-1 = G²).
inline Vec landmarks(const Vec& q, int64_t B, int64_t N, int64_t C, const Opts& o) {
  const int64_t L = N - 1, first = o.pool == "shifted" ? 0 : 1;
  int64_t G = 0;
  while ((G + 1) * (G + 1) <= L) ++G;
  const bool two_d = G * G == L;
  int64_t p = 0;
  while ((p + 1) * (p + 1) <= o.m) ++p;
  Vec R(static_cast<size_t>(B * o.m * C), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < o.m; ++j) {
      std::vector<int64_t> toks;
      if (two_d) {
        auto [r0, r1] = bin(j / p, G, p);
        auto [c0, c1] = bin(j % p, G, p);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) toks.push_back(first + r * G + c);
      } else {
        auto [t0, t1] = bin(j, L, o.m);
        for (int64_t t = t0; t < t1; ++t) toks.push_back(first + t);
      }
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0;
        for (int64_t t : toks) sum += q[(b * N + t) * C + c];
        R[(b * o.m + j) * C + c] = sum / static_cast<double>(toks.size());
      }
    }
  return R;
}

/// Indices of the n largest of `score` (ties: lower index first).
inline std::vector<int64_t> top(const Vec& score, int64_t n) {
  std::vector<int64_t> idx(score.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  idx.resize(static_cast<size_t>(n));
  return idx;
}

inline Vec softmax_weighted_sum(const std::vector<Vec>& keys, const std::vector<Vec>& vals, const Vec& q,
                                double scale) {
  Vec logit(keys.size());
  double mx = -1e300;
  for (size_t i = 0; i < keys.size(); ++i) {
    double dot = 0;
    for (size_t c = 0; c < q.size(); ++c) dot += q[c] * keys[i][c];
    logit[i] = dot * scale;
    mx = std::max(mx, logit[i]);
  }
  double z = 0;
  for (double& l : logit) z += (l = std::exp(l - mx));
  Vec out(vals[0].size(), 0.0);
  for (size_t i = 0; i < vals.size(); ++i)
    for (size_t c = 0; c < out.size(); ++c) out[c] += logit[i] / z * vals[i][c];
  return out;
}

/// Row n of head h of x [B, rows, C] as a d-vector.
inline Vec head_row(const Vec& x, int64_t b, int64_t n, int64_t h, int64_t rows, int64_t C, int64_t d) {
  const double* p = x.data() + (b * rows + n) * C + h * d;
  return Vec(p, p + d);
}

/// MiTA with the given landmarks R [B, m, C].
inline Vec mita_with(const Vec& q, const Vec& k, const Vec& v, const Vec& R, int64_t B, int64_t N, int64_t C,
                     const Opts& o) {
  const int64_t H = o.heads, d = C / H;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const double key_scale = o.scale == "official" ? scale : 1.0;  // official: shared keys r·d^-1/2
  Vec out(static_cast<size_t>(B * N * C), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<Vec> Q, K, V, Rh;
      for (int64_t n = 0; n < N; ++n) {
        Q.push_back(head_row(q, b, n, h, N, C, d));
        K.push_back(head_row(k, b, n, h, N, C, d));
        V.push_back(head_row(v, b, n, h, N, C, d));
      }
      for (int64_t j = 0; j < o.m; ++j) Rh.push_back(head_row(R, b, j, h, o.m, C, d));
      auto dot = [&](const Vec& a, const Vec& c) {
        double s = 0;
        for (int64_t i = 0; i < d; ++i) s += a[i] * c[i];
        return s;
      };
      std::vector<std::vector<int64_t>> I;  // expert j's keys
      std::vector<Vec> V_hat;
      for (int64_t j = 0; j < o.m; ++j) {
        Vec score(N);
        for (int64_t n = 0; n < N; ++n) score[n] = dot(Rh[j], K[n]);
        I.push_back(top(score, o.k));
        V_hat.push_back(softmax_weighted_sum(K, V, Rh[j], scale));
      }
      for (int64_t n = 0; n < N; ++n) {
        Vec gate(o.m);
        for (int64_t j = 0; j < o.m; ++j) gate[j] = dot(Rh[j], Q[n]);
        std::vector<Vec> Ks, Vs;  // K* and V*
        if (!o.route_only)
          for (int64_t j = 0; j < o.m; ++j) {
            Vec key = Rh[j];
            for (double& x : key) x *= key_scale;
            Ks.push_back(key);
            Vs.push_back(V_hat[j]);
          }
        for (int64_t e : top(gate, o.s))
          for (int64_t i : I[e]) {
            Ks.push_back(K[i]);
            Vs.push_back(V[i]);
          }
        Vec o_n = softmax_weighted_sum(Ks, Vs, Q[n], scale);
        for (int64_t c = 0; c < d; ++c) out[(b * N + n) * C + h * d + c] = o_n[c];
      }
    }
  return out;
}

inline Vec mita(const Vec& q, const Vec& k, const Vec& v, int64_t B, int64_t N, int64_t C, const Opts& o) {
  return mita_with(q, k, v, landmarks(q, B, N, C, o), B, N, C, o);
}

/// softmax(Q Kᵀ/√d) V per head.
inline Vec dense(const Vec& q, const Vec& k, const Vec& v, int64_t B, int64_t N, int64_t C, int64_t H) {
  const int64_t d = C / H;
  Vec out(static_cast<size_t>(B * N * C), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<Vec> K, V;
      for (int64_t n = 0; n < N; ++n) {
        K.push_back(head_row(k, b, n, h, N, C, d));
        V.push_back(head_row(v, b, n, h, N, C, d));
      }
      for (int64_t n = 0; n < N; ++n) {
        Vec o_n = softmax_weighted_sum(K, V, head_row(q, b, n, h, N, C, d), 1.0 / std::sqrt(double(d)));
        for (int64_t c = 0; c < d; ++c) out[(b * N + n) * C + h * d + c] = o_n[c];
      }
    }
  return out;
}

}  // namespace vt::test::mita_ref
