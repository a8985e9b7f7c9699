// MiTA CPU kernels (see mita.h). Each (batch, head) is independent, so the loops over it run in parallel and
// every output row is written by one thread: the results do not depend on the thread count.
#include "kernels/cpu/mita.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

template <typename T>
const T* row_of(const AttentionView& v, int64_t b, int64_t h, int64_t r) {
  return static_cast<const T*>(v.data) + b * v.batch_stride + h * v.head_stride + r * v.row_stride;
}
template <typename T>
T* mutable_row(const AttentionView& v, int64_t b, int64_t h, int64_t r) {
  return const_cast<T*>(row_of<T>(v, b, h, r));
}

template <typename T>
double dot(const T* a, const T* b, int64_t d) {
  double s = 0;
  for (int64_t c = 0; c < d; ++c) s += static_cast<double>(a[c]) * static_cast<double>(b[c]);
  return s;
}

template <typename T>
void route(const AttentionView& q, const AttentionView& k, const AttentionView& r, const MitaShapeF64& s,
           int32_t* expert_keys, int32_t* experts, int32_t* order, int32_t* offsets) {
  const int64_t N = s.N, m = s.m, kk = s.k, d = s.d;
#pragma omp parallel for schedule(dynamic)
  for (int64_t bh = 0; bh < s.B * s.H; ++bh) {
    const int64_t b = bh / s.H, h = bh % s.H;
    std::vector<double> score(static_cast<size_t>(N));
    std::vector<int32_t> idx(static_cast<size_t>(N));
    for (int64_t j = 0; j < m; ++j) {
      const T* rj = row_of<T>(r, b, h, j);
      for (int64_t n = 0; n < N; ++n) score[n] = dot(rj, row_of<T>(k, b, h, n), d);
      std::iota(idx.begin(), idx.end(), 0);
      // The k largest, ties to the lower index; then the set in ascending key order.
      std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(),
                        [&](int32_t a, int32_t c) { return score[a] > score[c] || (score[a] == score[c] && a < c); });
      std::sort(idx.begin(), idx.begin() + kk);
      std::copy(idx.begin(), idx.begin() + kk, expert_keys + (bh * m + j) * kk);
    }
    int32_t* ex = experts + bh * N;
    std::vector<int32_t> count(static_cast<size_t>(m), 0);
    for (int64_t n = 0; n < N; ++n) {
      const T* qn = row_of<T>(q, b, h, n);
      double best = -std::numeric_limits<double>::infinity();
      int32_t arg = 0;
      for (int64_t j = 0; j < m; ++j) {
        const double g = dot(row_of<T>(r, b, h, j), qn, d);
        if (g > best) best = g, arg = static_cast<int32_t>(j);  // first maximum wins
      }
      ex[n] = arg;
      ++count[arg];
    }
    int32_t* off = offsets + bh * (m + 1);
    off[0] = 0;
    for (int64_t j = 0; j < m; ++j) off[j + 1] = off[j] + count[j];
    std::vector<int32_t> next(off, off + m);
    for (int64_t n = 0; n < N; ++n) order[bh * N + next[ex[n]]++] = static_cast<int32_t>(n);  // stable
  }
}

/// The slots of the joint softmax seen by the queries of expert e: [m shared | k routed] (key, value, logit scale).
template <typename T>
struct Slots {
  std::vector<const T*> key, value;
  std::vector<double> scale;
  std::vector<int64_t> routed_row;  // key index for routed slots, -1 for shared ones
};

template <typename T>
Slots<T> slots_of(const AttentionView& k, const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                  const MitaRoutingArrays& idx, const MitaShapeF64& s, int64_t b, int64_t h, int64_t e) {
  Slots<T> sl;
  if (s.shared)
    for (int64_t j = 0; j < s.m; ++j) {
      sl.key.push_back(row_of<T>(r, b, h, j));
      sl.value.push_back(row_of<T>(v_hat, b, h, j));
      sl.scale.push_back(s.shared_scale);
      sl.routed_row.push_back(-1);
    }
  const int32_t* keys = idx.expert_keys + ((b * s.H + h) * s.m + e) * s.k;
  for (int64_t i = 0; i < s.k; ++i) {
    sl.key.push_back(row_of<T>(k, b, h, keys[i]));
    sl.value.push_back(row_of<T>(v, b, h, keys[i]));
    sl.scale.push_back(s.scale);
    sl.routed_row.push_back(keys[i]);
  }
  return sl;
}

/// p = softmax over the slots of scale·q·key.
template <typename T>
void joint_softmax(const T* q, const Slots<T>& sl, int64_t d, std::vector<double>& p) {
  const size_t S = sl.key.size();
  p.resize(S);
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  for (size_t j = 0; j < S; ++j) mx = std::max(mx, p[j] = sl.scale[j] * dot(q, sl.key[j], d));
  for (size_t j = 0; j < S; ++j) sum += (p[j] = std::exp(p[j] - mx));
  for (size_t j = 0; j < S; ++j) p[j] /= sum;
}

template <typename T>
void forward(const AttentionView& out, const AttentionView& q, const AttentionView& k, const AttentionView& v,
             const AttentionView& r, const AttentionView& v_hat, const MitaRoutingArrays& idx, const MitaShapeF64& s) {
  const int64_t d = s.d;
#pragma omp parallel for schedule(dynamic)
  for (int64_t bh = 0; bh < s.B * s.H; ++bh) {
    const int64_t b = bh / s.H, h = bh % s.H;
    std::vector<double> p, acc(static_cast<size_t>(d));
    for (int64_t e = 0; e < s.m; ++e) {
      const Slots<T> sl = slots_of<T>(k, v, r, v_hat, idx, s, b, h, e);
      const int32_t* off = idx.offsets + bh * (s.m + 1);
      for (int32_t t = off[e]; t < off[e + 1]; ++t) {
        const int64_t n = idx.order[bh * s.N + t];
        joint_softmax(row_of<T>(q, b, h, n), sl, d, p);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (size_t j = 0; j < p.size(); ++j)
          for (int64_t c = 0; c < d; ++c) acc[c] += p[j] * static_cast<double>(sl.value[j][c]);
        T* o = mutable_row<T>(out, b, h, n);
        for (int64_t c = 0; c < d; ++c) o[c] = static_cast<T>(acc[c]);
      }
    }
  }
}

template <typename T>
void backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv, const AttentionView& dr,
              const AttentionView& dv_hat, const AttentionView& dout, const AttentionView& q, const AttentionView& k,
              const AttentionView& v, const AttentionView& r, const AttentionView& v_hat, const MitaRoutingArrays& idx,
              const MitaShapeF64& s) {
  const int64_t d = s.d, N = s.N, m = s.m;
#pragma omp parallel for schedule(dynamic)
  for (int64_t bh = 0; bh < s.B * s.H; ++bh) {
    const int64_t b = bh / s.H, h = bh % s.H;
    // f64 accumulators for this (b, h): dq, dk, dv [N, d], dr, dv_hat [m, d].
    std::vector<double> gq(N * d, 0.0), gk(N * d, 0.0), gv(N * d, 0.0), gr(m * d, 0.0), gvh(m * d, 0.0);
    std::vector<double> p, dp;
    for (int64_t e = 0; e < m; ++e) {
      const Slots<T> sl = slots_of<T>(k, v, r, v_hat, idx, s, b, h, e);
      const int32_t* off = idx.offsets + bh * (m + 1);
      for (int32_t t = off[e]; t < off[e + 1]; ++t) {
        const int64_t n = idx.order[bh * N + t];
        const T* qn = row_of<T>(q, b, h, n);
        const T* go = row_of<T>(dout, b, h, n);
        joint_softmax(qn, sl, d, p);
        dp.resize(p.size());
        double row_dot = 0;  // Σ_j p_j·(dO·v_j) = dO·o
        for (size_t j = 0; j < p.size(); ++j) row_dot += p[j] * (dp[j] = dot(go, sl.value[j], d));
        for (size_t j = 0; j < p.size(); ++j) {
          const double ds = p[j] * (dp[j] - row_dot) * sl.scale[j];
          const bool routed = sl.routed_row[j] >= 0;
          double* gkey = routed ? &gk[sl.routed_row[j] * d] : &gr[j * d];
          double* gval = routed ? &gv[sl.routed_row[j] * d] : &gvh[j * d];
          for (int64_t c = 0; c < d; ++c) {
            gq[n * d + c] += ds * static_cast<double>(sl.key[j][c]);
            gkey[c] += ds * static_cast<double>(qn[c]);
            gval[c] += p[j] * static_cast<double>(go[c]);
          }
        }
      }
    }
    auto store = [&](const AttentionView& g, const std::vector<double>& acc, int64_t rows) {
      for (int64_t i = 0; i < rows; ++i) {
        T* row = mutable_row<T>(g, b, h, i);
        for (int64_t c = 0; c < d; ++c) row[c] = static_cast<T>(acc[i * d + c]);
      }
    };
    store(dq, gq, N);
    store(dk, gk, N);
    store(dv, gv, N);
    if (s.shared) {
      store(dr, gr, m);
      store(dv_hat, gvh, m);
    }
  }
}

}  // namespace

void mita_route(DType dtype, const AttentionView& q, const AttentionView& k, const AttentionView& r,
                const MitaShapeF64& s, int32_t* expert_keys, int32_t* experts, int32_t* order, int32_t* offsets) {
  switch (dtype) {
    case DType::f32: return route<float>(q, k, r, s, expert_keys, experts, order, offsets);
    case DType::f64: return route<double>(q, k, r, s, expert_keys, experts, order, offsets);
    default: VT_FAIL("[mita_route] CPU kernel supports f32/f64, got ", dtype_name(dtype));
  }
}

void mita_attention_forward(DType dtype, const AttentionView& out, const AttentionView& q, const AttentionView& k,
                            const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                            const MitaRoutingArrays& idx, const MitaShapeF64& s) {
  switch (dtype) {
    case DType::f32: return forward<float>(out, q, k, v, r, v_hat, idx, s);
    case DType::f64: return forward<double>(out, q, k, v, r, v_hat, idx, s);
    default: VT_FAIL("[mita_attention] CPU kernel supports f32/f64, got ", dtype_name(dtype));
  }
}

void mita_attention_backward(DType dtype, const AttentionView& dq, const AttentionView& dk, const AttentionView& dv,
                             const AttentionView& dr, const AttentionView& dv_hat, const AttentionView& dout,
                             const AttentionView& q, const AttentionView& k, const AttentionView& v,
                             const AttentionView& r, const AttentionView& v_hat, const MitaRoutingArrays& idx,
                             const MitaShapeF64& s) {
  switch (dtype) {
    case DType::f32: return backward<float>(dq, dk, dv, dr, dv_hat, dout, q, k, v, r, v_hat, idx, s);
    case DType::f64: return backward<double>(dq, dk, dv, dr, dv_hat, dout, q, k, v, r, v_hat, idx, s);
    default: VT_FAIL("[mita_attention] CPU kernel supports f32/f64, got ", dtype_name(dtype));
  }
}

}  // namespace vt::kernels::cpu
