// mita_small.h's forward: routing, V̂ and the joint softmax of one (batch, head) per CTA.
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/ordered_bits.cuh"
#include "kernels/cuda/device_limits.h"
#include "kernels/cuda/mita/mita_small.h"
#include "kernels/cuda/mita/mita_small_core.cuh"

namespace vt::kernels::cuda {

namespace {

using namespace mita_small_core;

/// How many of a warp's row are ≥ t (entries past N hold −inf; t is finite).
template <int kPer>
__device__ __forceinline__ int count_at_least(const float (&val)[kPer], float t) {
  unsigned c = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i) c += val[i] >= t;
  return static_cast<int>(__reduce_add_sync(0xffffffffu, c));
}

/// Marks in `chosen` (bit i: key lane + 32i) the k largest of a warp's row (entries past N hold −inf; mx: its
/// maximum), ties to the lower key; keys are ordered float bits (−0 below +0). The threshold T is the k-th largest
/// key. A few probes in value space, each a warp count of the scores ≥ t placed by Illinois interpolation between a
/// bracket lo < hi with count(lo) > k > count(hi), usually land on a t ≠ 0 with exactly k scores at or above it
/// (t's key is then T). Otherwise (ties at the boundary, scores that are not finite, or no luck) a bit-by-bit search
/// over the keys finishes it, below the bracket's common key prefix.
template <int kPer>
__device__ __forceinline__ uint32_t top_k_bits(const float (&val)[kPer], float mx, int N, int k, int lane) {
  uint32_t u[kPer];
  bool finite = true;
  float mn = INFINITY;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const bool valid = lane + 32 * i < N;
    u[i] = valid ? device::ordered_bits(val[i]) : 0u;
    finite = finite && (!valid || isfinite(val[i]));
    if (valid) mn = fminf(mn, val[i]);
  }
  uint32_t T = 0;
  int bit = 31;
  bool found = false;
  if (__all_sync(0xffffffffu, finite)) {
    mn = -warp_max(-mn);
    float lo = mn, hi = mx, f_lo = static_cast<float>(N), f_hi = static_cast<float>(count_at_least(val, mx));
    const float want = static_cast<float>(k);
    const bool bracket = f_hi < want;  // else the k-th largest is the maximum (a zero: left to the bit search)
    if (!bracket && mx != 0.f) {
      T = device::ordered_bits(mx);
      found = true;
    }
    int side = 0;
    for (int probe = 0; probe < 8 && bracket && !found; ++probe) {
      float t = lo + (hi - lo) * ((f_lo - want) / (f_lo - f_hi));
      if (!(t > lo && t < hi) || t == 0.f) t = lo + 0.5f * (hi - lo);
      if (!(t > lo && t < hi) || t == 0.f) break;  // no float between them (or only a zero, whose key is ambiguous)
      const int f = count_at_least(val, t);
      if (f == k) {
        T = device::ordered_bits(t);
        found = true;
      } else if (f > k) {
        lo = t, f_lo = static_cast<float>(f);
        if (side > 0) f_hi = want + 0.5f * (f_hi - want);
        side = 1;
      } else {
        hi = t, f_hi = static_cast<float>(f);
        if (side < 0) f_lo = want + 0.5f * (f_lo - want);
        side = -1;
      }
    }
    if (!found && bracket) {  // T lies in [key(lo), key(hi)) ([0, ..) while lo is the minimum): it shares their
                              // bits above the first one that differs
      const uint32_t a = lo != mn ? device::ordered_bits(lo) : 0u, d = a ^ device::ordered_bits(hi);
      bit = 31 - __clz(d);
      T = bit == 31 ? 0u : a & ~((2u << bit) - 1u);
    }
  }
  for (; !found && bit >= 0; --bit) {
    const uint32_t cand = T | (1u << bit);
    unsigned c = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) c += lane + 32 * i < N && u[i] >= cand;
    const int count = static_cast<int>(__reduce_add_sync(0xffffffffu, c));
    if (count >= k) T = cand;
    if (count == k) break;  // the k keys at or above cand are the top k, whatever the lower bits
  }
  unsigned above = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i) above += lane + 32 * i < N && u[i] > T;
  int need = k - static_cast<int>(__reduce_add_sync(0xffffffffu, above));
  uint32_t chosen = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const bool valid = lane + 32 * i < N;
    const unsigned eq = __ballot_sync(0xffffffffu, valid && u[i] == T);
    const bool take_eq = ((eq >> lane) & 1u) && __popc(eq & ((1u << lane) - 1u)) < need;
    need -= __popc(eq);
    if (valid && (u[i] > T || take_eq)) chosen |= 1u << i;
  }
  return chosen;
}

/// Starts copying query rows of one warp into its staging rows Qw [16][D + kPad]: rows[r] for r < count (global row
/// indices), zero rows after; `rows` null: the consecutive rows first + r. stage_queries waits for them.
template <int D>
__device__ __forceinline__ void start_staging(bf16* Qw, const Rows& q, int b, int h, const int* rows, int first,
                                              int count, int lane) {
  constexpr int kChunks = D / 8, ld = D + flash::kPad;
  for (int c = lane; c < 16 * kChunks; c += 32) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool ok = r < count;
    const int n = ok ? (rows ? rows[first + r] : first + r) : 0;
    flash::cp_async16(Qw + r * ld + col, q.row(b, h, n) + col, ok);
  }
  flash::cp_async_commit();
}

template <int D>
__device__ __forceinline__ void stage_queries(bf16* Qw, const Rows& q, int b, int h, const int* rows, int first,
                                              int count, int lane) {
  start_staging<D>(Qw, q, b, h, rows, first, count, lane);
  flash::cp_async_wait<0>();
  __syncwarp();
}

struct FwdParams {
  Rows q, k, v, r, out;  // r: written (the pooled landmarks)
  PoolBins pool;
  float *lse, *lse_shared;
  bf16* v_hat;
  int32_t *expert_keys, *experts, *order, *offsets;
  int H, N, m, topk;
  float scale_log2, shared_scale_log2;
};

template <int D, int kPer>
__global__ void __launch_bounds__(kFwdWarps * 32) small_forward_kernel(FwdParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kThreads = kFwdWarps * 32, ld = D + flash::kPad;
  const int N = p.N, m = p.m, topk = p.topk, np = padded_rows(N), lp = 2 * np;  // lp: V̂'s numerators' row length
  const FwdLayout L(N, D, m);
  bf16 *Ks = reinterpret_cast<bf16*>(smem + L.k), *Vs = reinterpret_cast<bf16*>(smem + L.v),
       *Rs = reinterpret_cast<bf16*>(smem + L.r), *VHs = reinterpret_cast<bf16*>(smem + L.v_hat),
       *Ps = reinterpret_cast<bf16*>(smem + L.scores);
  float* S = reinterpret_cast<float*>(smem + L.scores);
  bf16* Qw = reinterpret_cast<bf16*>(smem + L.scores) + (threadIdx.x >> 5) * 16 * ld;
  int *ek = reinterpret_cast<int*>(smem + L.keys), *expert_of = reinterpret_cast<int*>(smem + L.expert_of),
      *order = reinterpret_cast<int*>(smem + L.order), *off = reinterpret_cast<int*>(smem + L.offsets),
      *cursor = reinterpret_cast<int*>(smem + L.cursor), *cnt = reinterpret_cast<int*>(smem + L.counts),
      *items = reinterpret_cast<int*>(smem + L.items);
  float* row_sum = reinterpret_cast<float*>(smem + L.misc);
  int* n_items = reinterpret_cast<int*>(smem + L.misc + kSlots * 4);
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;

  load_rows<D, kThreads>(Ks, p.k, b, h, N, np + 1, tid);
  load_rows<D, kThreads>(Vs, p.v, b, h, N, np + 1, tid);
  flash::cp_async_commit();
  pool_landmarks<D, kThreads>(Rs, p.r, p.q, p.pool, b, h, tid);  // while K and V arrive
  if (tid < kSlots) cnt[tid] = 0;
  flash::cp_async_wait<0>();
  __syncthreads();

  // S = R·Kᵀ, unscaled, f32: 2 landmark tiles × np/16 key tiles.
  for (int item = warp; item < 2 * (np / 16); item += kFwdWarps) {
    const int m0 = (item & 1) * 16, n0 = (item >> 1) * 16;
    float acc[2][4] = {};
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
      uint32_t a[4], bf[4];
      flash::ldmatrix_x4(a, flash::a_rows(Rs, ld, m0, kc * 16, lane));
      flash::ldmatrix_x4(bf, flash::b_rows_nk(Ks, ld, n0, kc * 16, lane));
      flash::mma_bf16(acc[0], a, bf[0], bf[1]);
      flash::mma_bf16(acc[1], a, bf[2], bf[3]);
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int col = n0 + nt * 8 + 2 * t;
      *reinterpret_cast<float2*>(S + (m0 + g) * np + col) = make_float2(acc[nt][0], acc[nt][1]);
      *reinterpret_cast<float2*>(S + (m0 + g + 8) * np + col) = make_float2(acc[nt][2], acc[nt][3]);
    }
  }
  __syncthreads();

  // Per landmark, one warp: its top-k keys, and V̂'s softmax numerators in bf16 written over its own score row.
  for (int j = warp; j < kSlots; j += kFwdWarps) {
    bf16* prow = Ps + j * lp;
    if (j >= m) {
      for (int n = lane; n < np; n += 32) prow[n] = __float2bfloat16(0.f);
      if (lane == 0) row_sum[j] = 1.f;
      continue;
    }
    float val[kPer];
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      val[i] = lane + 32 * i < N ? S[j * np + lane + 32 * i] : -INFINITY;
      mx = fmaxf(mx, val[i]);
    }
    mx = warp_max(mx);
    __syncwarp();  // the row is read before it is overwritten
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int n = lane + 32 * i;
      if (n >= np) continue;
      const float e = n < N ? exp2f((val[i] - mx) * p.scale_log2) : 0.f;
      sum += e;
      prow[n] = __float2bfloat16(e);
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      row_sum[j] = sum;
      p.lse_shared[bh * m + j] = (mx * p.scale_log2 + log2f(sum)) * kLn2;
    }
    const uint32_t chosen = top_k_bits<kPer>(val, mx, N, topk, lane);
    int base = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {  // the chosen keys in ascending order
      const bool sel = (chosen >> i) & 1u;
      const unsigned ball = __ballot_sync(0xffffffffu, sel);
      if (sel) {
        const int pos = base + __popc(ball & ((1u << lane) - 1u));
        ek[j * kSlots + pos] = lane + 32 * i;
        p.expert_keys[(static_cast<int64_t>(bh) * m + j) * topk + pos] = lane + 32 * i;
      }
      base += __popc(ball);
    }
    for (int s = topk + lane; s < kSlots; s += 32) ek[j * kSlots + s] = np;
  }
  __syncthreads();

  // V̂ = P·V / row sums: 2 landmark tiles × D/16 column tiles.
  for (int item = warp; item < 2 * (D / 16); item += kFwdWarps) {
    const int m0 = (item & 1) * 16, n0 = (item >> 1) * 16;
    float acc[2][4] = {};
    for (int kc = 0; kc < np / 16; ++kc) {
      uint32_t a[4], bf[4];
      flash::ldmatrix_x4(a, flash::a_rows(Ps, lp, m0, kc * 16, lane));
      flash::ldmatrix_x4_trans(bf, flash::b_rows_kn(Vs, ld, kc * 16, n0, lane));
      flash::mma_bf16(acc[0], a, bf[0], bf[1]);
      flash::mma_bf16(acc[1], a, bf[2], bf[3]);
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = m0 + g + 8 * half;
      const float inv = 1.f / row_sum[row];
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int col = n0 + nt * 8 + 2 * t;
        const float x = acc[nt][2 * half] * inv, y = acc[nt][2 * half + 1] * inv;
        store_pair(VHs + row * ld + col, x, y);
        if (row < m) store_pair(p.v_hat + (static_cast<int64_t>(bh) * m + row) * D + col, x, y);
      }
    }
  }
  __syncthreads();

  // Each query's expert: arg-max of q·Rᵀ over 16-query tiles (the warps' staging rows now hold queries).
  for (int q0 = warp * 16; q0 < np; q0 += kFwdWarps * 16) {
    stage_queries<D>(Qw, p.q, b, h, nullptr, q0, min(16, N - q0), lane);
    float acc[4][4] = {};
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
      uint32_t a[4];
      flash::ldmatrix_x4(a, flash::a_rows(Qw, ld, 0, kc * 16, lane));
#pragma unroll
      for (int nn = 0; nn < 2; ++nn) {
        uint32_t bf[4];
        flash::ldmatrix_x4(bf, flash::b_rows_nk(Rs, ld, nn * 16, kc * 16, lane));
        flash::mma_bf16(acc[2 * nn], a, bf[0], bf[1]);
        flash::mma_bf16(acc[2 * nn + 1], a, bf[2], bf[3]);
      }
    }
    __syncwarp();  // the staging rows are read before the next tile's copies
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float best = -INFINITY;
      int bj = INT_MAX;
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int j = nt * 8 + 2 * t + e;
          const float x = acc[nt][2 * half + e];
          if (j < m && (x > best || (x == best && j < bj))) best = x, bj = j;
        }
#pragma unroll
      for (int o = 1; o <= 2; o <<= 1) {
        const float ob = __shfl_xor_sync(0xffffffffu, best, o);
        const int oj = __shfl_xor_sync(0xffffffffu, bj, o);
        if (ob > best || (ob == best && oj < bj)) best = ob, bj = oj;
      }
      const int n = q0 + g + 8 * half;
      if (t == 0 && n < N) {
        if (bj == INT_MAX) bj = 0;  // scores that are all NaN: any expert
        expert_of[n] = bj;
        p.experts[static_cast<int64_t>(bh) * N + n] = bj;
        atomicAdd(&cnt[bj], 1);
      }
    }
  }
  __syncthreads();

  // Offsets and a stable counting sort of the queries by expert (warp 0).
  if (warp == 0) {
    const int c = lane < m ? cnt[lane] : 0;
    int incl = c;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += y;
    }
    if (lane < m) {
      off[lane] = cursor[lane] = incl - c;
      p.offsets[bh * (m + 1) + lane] = incl - c;
    }
    if (lane == 0) {
      off[m] = N;
      p.offsets[bh * (m + 1) + m] = N;
    }
    __syncwarp();
    list_items(off, m, items, n_items, lane);
    for (int base = 0; base < N; base += 32) {
      const int n = base + lane;
      const int e = n < N ? expert_of[n] : -1;
      const unsigned peers = __match_any_sync(0xffffffffu, e);
      if (e >= 0) {
        const int pos = cursor[e] + __popc(peers & ((1u << lane) - 1u));
        order[pos] = n;
        p.order[static_cast<int64_t>(bh) * N + pos] = n;
      }
      __syncwarp();
      if (e >= 0 && lane == __ffs(peers) - 1) cursor[e] += __popc(peers);
      __syncwarp();
    }
  }
  __syncthreads();

  // The joint softmax: one warp per (expert, 16 queries).
  // The next item's query rows are copied in while this one computes (Qw is free once its fragments are loaded).
  auto start_item = [&](int i) {
    const Item it(items, off, i);
    start_staging<D>(Qw, p.q, b, h, order, it.first, it.count, lane);
  };
  if (warp < *n_items) start_item(warp);
  for (int i = warp; i < *n_items; i += kFwdWarps) {
    const Item it(items, off, i);
    const int* keys = ek + it.expert * kSlots;
    flash::cp_async_wait<0>();
    __syncwarp();
    uint32_t qa[D / 16][4];
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) flash::ldmatrix_x4(qa[kc], flash::a_rows(Qw, ld, 0, kc * 16, lane));
    __syncwarp();
    if (i + kFwdWarps < *n_items) start_item(i + kFwdWarps);
    float sr[4][4] = {}, ss[4][4] = {};
    slot_scores<D>(sr, ss, qa, Ks, Rs, keys, lane);
    float mx[2] = {-INFINITY, -INFINITY}, sum[2] = {0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int col = nt * 8 + 2 * t + (x & 1);
        sr[nt][x] = col < topk ? sr[nt][x] * p.scale_log2 : -INFINITY;
        ss[nt][x] = col < m ? ss[nt][x] * p.shared_scale_log2 : -INFINITY;
        mx[x >> 1] = fmaxf(mx[x >> 1], fmaxf(sr[nt][x], ss[nt][x]));
      }
    mx[0] = quad_max(mx[0]), mx[1] = quad_max(mx[1]);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        sr[nt][x] = exp2f(sr[nt][x] - mx[x >> 1]);
        ss[nt][x] = exp2f(ss[nt][x] - mx[x >> 1]);
        sum[x >> 1] += sr[nt][x] + ss[nt][x];
      }
    sum[0] = quad_sum(sum[0]), sum[1] = quad_sum(sum[1]);
    float o[D / 8][4] = {};
    slot_values<D>(o, sr, ss, Vs, VHs, keys, lane);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = g + 8 * half;
      if (r >= it.count) continue;
      const int n = order[it.first + r];
      const float inv = 1.f / sum[half];
      bf16* dst = p.out.out_row(b, h, n);
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
        store_pair(dst + nt * 8 + 2 * t, o[nt][2 * half] * inv, o[nt][2 * half + 1] * inv);
      if (t == 0) p.lse[static_cast<int64_t>(bh) * N + n] = (mx[half] + log2f(sum[half])) * kLn2;
    }
  }
}

}  // namespace

using namespace mita_small_core;

bool mita_small_supported(const MitaShape& s) {
  if (!s.shared || !(s.d == 32 || s.d == 64) || s.m < 1 || s.m > kSlots || s.k < 1 || s.k > kSlots || s.k > s.N ||
      s.N > kMaxN || s.B * s.H > INT_MAX)
    return false;
  const int N = static_cast<int>(s.N), D = static_cast<int>(s.d), m = static_cast<int>(s.m);
  const int limit = max_dynamic_shared_memory();
  return FwdLayout(N, D, m).total <= limit && BwdLayout(N, D, m).total <= limit;
}

bool mita_small_pool_fits(const MitaSmallPool& p, const MitaShape& s) {
  if (p.first < 0 || p.L < 1 || p.first + p.L > s.N) return false;
  return p.grid == 0 || (p.grid * p.grid == p.L && p.pool * p.pool == s.m);
}

void mita_small_forward(const AttentionView& out, float* lse, float* lse_shared, void* v_hat, int32_t* expert_keys,
                        int32_t* experts, int32_t* order, int32_t* offsets, const AttentionView& r,
                        const AttentionView& q, const AttentionView& k, const AttentionView& v,
                        const MitaSmallPool& pool, const MitaShape& s, cudaStream_t stream) {
  VT_CHECK(mita_small_supported(s) && mita_small_pool_fits(pool, s),
           "[mita] the one-CTA MiTA kernels do not take N = ", s.N, ", m = ", s.m, ", k = ", s.k, ", head dim ", s.d,
           " with landmarks pooled over tokens ", pool.first, "..", pool.first + pool.L - 1);
  FwdParams p{rows_of(q),
              rows_of(k),
              rows_of(v),
              rows_of(r),
              rows_of(out),
              pool_bins(pool, s),
              lse,
              lse_shared,
              static_cast<bf16*>(v_hat),
              expert_keys,
              experts,
              order,
              offsets,
              static_cast<int>(s.H),
              static_cast<int>(s.N),
              static_cast<int>(s.m),
              static_cast<int>(s.k),
              s.scale * kLog2e,
              s.shared_scale * kLog2e};
  dispatch_small_dim(s.d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    const int bytes = FwdLayout(p.N, D, p.m).total;
    auto launch = [&](auto kernel) {
      VT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      kernel<<<static_cast<unsigned>(s.B * s.H), kFwdWarps * 32, bytes, stream>>>(p);
      VT_CUDA_CHECK(cudaGetLastError());
    };
    if (p.N <= 256) launch(small_forward_kernel<D, 8>);
    else launch(small_forward_kernel<D, kMaxN / 32>);
  });
}

}  // namespace vt::kernels::cuda
