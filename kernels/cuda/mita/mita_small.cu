// mita_small.h: the MiTA layer core in one CTA per (batch, head), forward and backward, bf16 on tensor cores
// (mma.m16n8k16 through flash_attention_device.cuh). Shared-memory rows are padded by 8 elements; row `np` (N rounded
// up to 16) of K, V and Q is a zero row that the gathers of unused slots and query rows read.
#include "kernels/cuda/mita/mita_small.h"

#include <cuda_bf16.h>

#include <climits>
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/flash_attention_device.cuh"

namespace vt::kernels::cuda {

namespace {

using flash::bf16;

constexpr int kSlots = 32;                    // m and k at most; slot tiles are 2 × 16
constexpr int kMaxN = 512;                    // the top-k keeps 16 scores per lane
constexpr int kFwdWarps = 8, kBwdWarps = 4;   // the backward holds more per warp and per CTA
constexpr int kTld = kSlots + flash::kPad;    // row length of a warp's [16 queries][slots] transpose buffers
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

struct Rows {  // a [B, H, rows, D] bf16 operand
  const bf16* data;
  int64_t b, h, n;
  __device__ const bf16* row(int bb, int hh, int r) const { return data + bb * b + hh * h + r * n; }
  __device__ bf16* out_row(int bb, int hh, int r) const { return const_cast<bf16*>(row(bb, hh, r)); }
};

Rows rows_of(const AttentionView& v) {
  return {static_cast<const bf16*>(v.data), v.batch_stride, v.head_stride, v.row_stride};
}

__host__ __device__ constexpr int padded_rows(int n) { return (n + 15) / 16 * 16; }
__host__ __device__ inline int take(int& at, int bytes) {
  const int here = at;
  at += (bytes + 15) / 16 * 16;
  return here;
}

// Byte offsets into the dynamic shared memory, computed the same way on the host (launch size) and the device.
struct FwdLayout {
  int k, v, r, v_hat, scores, keys, expert_of, order, offsets, cursor, counts, items, misc, total;
  __host__ __device__ FwdLayout(int N, int D, int m) {
    const int np = padded_rows(N), ld = D + flash::kPad;
    int at = 0;
    k = take(at, (np + 1) * ld * 2);
    v = take(at, (np + 1) * ld * 2);
    r = take(at, kSlots * ld * 2);
    v_hat = take(at, kSlots * ld * 2);
    // One region three ways: the f32 scores R·Kᵀ, then (row by row, in place) V̂'s bf16 softmax numerators, then
    // each warp's 16 query rows.
    const int staging = kFwdWarps * 16 * ld * 2;
    scores = take(at, kSlots * np * 4 > staging ? kSlots * np * 4 : staging);
    keys = take(at, m * kSlots * 4);
    expert_of = take(at, np * 4);
    order = take(at, np * 4);
    offsets = take(at, (kSlots + 1) * 4);
    cursor = take(at, kSlots * 4);
    counts = take(at, kSlots * 4);
    items = take(at, (np / 16 + kSlots) * 4);
    misc = take(at, kSlots * 4 + 16);  // the softmax row sums of V̂, the item count
    total = at;
  }
};

struct BwdLayout {
  int k, v, r, v_hat, keys, order, offsets, items, misc, scratch, total;
  __host__ __device__ BwdLayout(int N, int D, int m) {
    const int np = padded_rows(N), ld = D + flash::kPad, lp = np + flash::kPad;
    int at = 0;
    k = take(at, (np + 1) * ld * 2);
    v = take(at, (np + 1) * ld * 2);
    r = take(at, kSlots * ld * 2);
    v_hat = take(at, kSlots * ld * 2);
    keys = take(at, m * kSlots * 4);
    order = take(at, np * 4);
    offsets = take(at, (kSlots + 1) * 4);
    items = take(at, (np / 16 + kSlots) * 4);
    misc = take(at, 2 * kSlots * 4 + 16);  // V̂'s lse and row terms, the item count
    // One region two ways: per warp Q, dO rows and two transpose buffers (the experts' pass), then P and dS of
    // V̂'s softmax and dV̂ in bf16 (V̂'s pass).
    const int per_warp = 2 * 16 * ld * 2 + 2 * 16 * kTld * 2;
    const int shared_pass = 2 * kSlots * lp * 2 + kSlots * ld * 2;
    scratch = take(at, kBwdWarps * per_warp > shared_pass ? kBwdWarps * per_warp : shared_pass);
    total = at;
  }
};

/// The backward's global f32 scratch per (b, h): the routed dK and dV sums [N][D] each and dV̂ [m][D]. Float atomics
/// in shared memory are compare-and-swap loops (9 ms a layer at DeiT-S); global ones are single L2 reductions, and a
/// (b, h)'s 100 KB stay in L2 while its CTA runs.
__host__ __device__ inline int64_t scratch_floats(int N, int D, int m) { return (2 * static_cast<int64_t>(N) + m) * D; }

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

__device__ __forceinline__ void store_pair(bf16* p, float a, float b) {
  *reinterpret_cast<uint32_t*>(p) = flash::pack_bf16(a, b);
}

/// Rows [0, rows) of a [.., rows, D] operand into smem [rows_total][D + kPad]; rows at or past `valid` are zeroed.
template <int D, int kThreads>
__device__ __forceinline__ void load_rows(bf16* smem, const Rows& src, int b, int h, int valid, int rows_total,
                                          int tid) {
  constexpr int kChunks = D / 8, ld = D + flash::kPad;
  for (int c = tid; c < rows_total * kChunks; c += kThreads) {
    const int row = c / kChunks, col = (c % kChunks) * 8;
    const bool ok = row < valid;
    flash::cp_async16(smem + row * ld + col, src.row(b, h, ok ? row : 0) + col, ok);
  }
}

/// Warp 0 lists the work items (expert, 16-query chunk) from the experts' offsets; returns through items/count.
__device__ inline void list_items(const int* off, int m, int* items, int* count, int lane) {
  const int c = lane < m ? off[lane + 1] - off[lane] : 0;
  const int chunks = (c + 15) / 16;
  int incl = chunks;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += y;
  }
  for (int x = 0; x < chunks; ++x) items[incl - chunks + x] = (lane << 16) | x;
  if (lane == 31) *count = incl;
}

/// The 16 query rows of one item: the expert's queries first + 0 .. count-1 (through `order`).
struct Item {
  int expert, first, count;
  __device__ Item(const int* items, const int* off, int i) {
    expert = items[i] >> 16;
    first = off[expert] + (items[i] & 0xffff) * 16;
    count = min(16, off[expert + 1] - first);
  }
};

/// s_routed += A·K_Iᵀ and s_shared += A·Rᵀ (16 rows × 32 slots each): A (16 × D) in registers, the expert's keys
/// gathered through `keys` (unused slots name the zero row), the landmarks' rows as they are.
template <int D>
__device__ __forceinline__ void slot_scores(float (&routed)[4][4], float (&shared)[4][4], const uint32_t (&a)[D / 16][4],
                                            const bf16* K, const bf16* R, const int* keys, int lane) {
  constexpr int ld = D + flash::kPad;
#pragma unroll
  for (int kc = 0; kc < D / 16; ++kc)
#pragma unroll
    for (int nn = 0; nn < 2; ++nn) {
      const int slot = nn * 16 + (lane & 7) + (lane >> 4) * 8, col = kc * 16 + ((lane >> 3) & 1) * 8;
      uint32_t b[4];
      flash::ldmatrix_x4(b, K + keys[slot] * ld + col);
      flash::mma_bf16(routed[2 * nn], a[kc], b[0], b[1]);
      flash::mma_bf16(routed[2 * nn + 1], a[kc], b[2], b[3]);
      flash::ldmatrix_x4(b, R + slot * ld + col);
      flash::mma_bf16(shared[2 * nn], a[kc], b[0], b[1]);
      flash::mma_bf16(shared[2 * nn + 1], a[kc], b[2], b[3]);
    }
}

/// acc (16 × D) += P_routed·X_I + P_shared·Y for 32 slots each (P as C fragments; X rows gathered through `keys`).
template <int D>
__device__ __forceinline__ void slot_values(float (&acc)[D / 8][4], const float (&p_routed)[4][4],
                                            const float (&p_shared)[4][4], const bf16* X, const bf16* Y,
                                            const int* keys, int lane) {
  constexpr int ld = D + flash::kPad;
#pragma unroll
  for (int kc = 0; kc < 2; ++kc) {
    uint32_t pr[4], ps[4];
    flash::a_fragment(pr, p_routed[2 * kc], p_routed[2 * kc + 1]);
    flash::a_fragment(ps, p_shared[2 * kc], p_shared[2 * kc + 1]);
    const int slot = kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, col = (lane >> 4) * 8;
    const bf16* x = X + keys[slot] * ld + col;
    const bf16* y = Y + slot * ld + col;
#pragma unroll
    for (int n0 = 0; n0 < D; n0 += 16) {
      uint32_t b[4];
      flash::ldmatrix_x4_trans(b, x + n0);
      flash::mma_bf16(acc[n0 / 8], pr, b[0], b[1]);
      flash::mma_bf16(acc[n0 / 8 + 1], pr, b[2], b[3]);
      flash::ldmatrix_x4_trans(b, y + n0);
      flash::mma_bf16(acc[n0 / 8], ps, b[0], b[1]);
      flash::mma_bf16(acc[n0 / 8 + 1], ps, b[2], b[3]);
    }
  }
}

/// Ordered bits of a float: larger floats give larger unsigned values.
__device__ __forceinline__ uint32_t ordered(float x) {
  const uint32_t u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/// Marks in `chosen` (bit i: key lane + 32i) the k largest of a warp's row, ties to the lower key: the k-th largest
/// value by a bit-by-bit search over ordered bits (32 counting passes), then the keys above it and, of those equal
/// to it, the lowest in index order.
template <int kPer>
__device__ __forceinline__ uint32_t top_k_bits(const float (&val)[kPer], int N, int k, int lane) {
  uint32_t u[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) u[i] = lane + 32 * i < N ? ordered(val[i]) : 0u;
  uint32_t T = 0;
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t cand = T | (1u << bit);
    unsigned c = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) c += lane + 32 * i < N && u[i] >= cand;
    if (static_cast<int>(__reduce_add_sync(0xffffffffu, c)) >= k) T = cand;
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

/// Query rows of one warp into its staging rows Qw [16][D + kPad]: rows[r] for r < count (global row indices),
/// zero rows after; `rows` null: the consecutive rows first + r.
template <int D>
__device__ __forceinline__ void stage_queries(bf16* Qw, const Rows& q, int b, int h, const int* rows, int first,
                                              int count, int lane) {
  constexpr int kChunks = D / 8, ld = D + flash::kPad;
  for (int c = lane; c < 16 * kChunks; c += 32) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool ok = r < count;
    const int n = ok ? (rows ? rows[first + r] : first + r) : 0;
    flash::cp_async16(Qw + r * ld + col, q.row(b, h, n) + col, ok);
  }
  flash::cp_async_commit();
  flash::cp_async_wait<0>();
  __syncwarp();
}

struct FwdParams {
  Rows q, k, v, r, out;
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
  load_rows<D, kThreads>(Rs, p.r, b, h, m, kSlots, tid);
  flash::cp_async_commit();
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
    const uint32_t chosen = top_k_bits<kPer>(val, N, topk, lane);
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
  for (int i = warp; i < *n_items; i += kFwdWarps) {
    const Item it(items, off, i);
    const int* keys = ek + it.expert * kSlots;
    stage_queries<D>(Qw, p.q, b, h, order, it.first, it.count, lane);
    uint32_t qa[D / 16][4];
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) flash::ldmatrix_x4(qa[kc], flash::a_rows(Qw, ld, 0, kc * 16, lane));
    __syncwarp();
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
      for (int nt = 0; nt < D / 8; ++nt) store_pair(dst + nt * 8 + 2 * t, o[nt][2 * half] * inv, o[nt][2 * half + 1] * inv);
      if (t == 0) p.lse[static_cast<int64_t>(bh) * N + n] = (mx[half] + log2f(sum[half])) * kLn2;
    }
  }
}

struct BwdParams {
  Rows q, k, v, r, v_hat, out, dout, dq, dk, dv;
  const float *lse, *lse_shared;
  const int32_t *expert_keys, *order, *offsets;
  float *dr, *scratch;  // dr [B, m, H·D]; scratch: scratch_floats per (b, h)
  int H, N, m, topk;
  float scale, shared_scale, scale_log2, shared_scale_log2;
};

/// dst[0..3] += v atomically (global, 16-byte aligned): one vector reduction on sm_90+.
__device__ __forceinline__ void atomic_add4(float* dst, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(dst), v);
#else
  atomicAdd(dst, v.x), atomicAdd(dst + 1, v.y), atomicAdd(dst + 2, v.z), atomicAdd(dst + 3, v.w);
#endif
}

/// Adds this lane's part of one row of two side-by-side C tiles (columns 2t, 2t + 1 of the first: lo; 8 + 2t,
/// 9 + 2t of the second: hi) into row[0..15] (global) with one 16-byte reduction per lane: lanes t and t ^ 1 swap
/// halves so that each holds four consecutive columns. Called by the whole warp; `active` lanes add.
__device__ __forceinline__ void atomic_add_row(float* row, float lo0, float lo1, float hi0, float hi1, bool active,
                                               int lane) {
  const int t = lane & 3;
  const bool even = (t & 1) == 0;
  const float r0 = __shfl_xor_sync(0xffffffffu, even ? hi0 : lo0, 1);
  const float r1 = __shfl_xor_sync(0xffffffffu, even ? hi1 : lo1, 1);
  if (!active) return;
  if (even)
    atomic_add4(row + 2 * t, make_float4(lo0, lo1, r0, r1));
  else
    atomic_add4(row + 8 + 2 * (t - 1), make_float4(r0, r1, hi0, hi1));
}

/// dst[rows(slot)] += Tᵀ·X for the 32 slots of one item: T [16 queries][kTld] bf16 (slot columns), X [16][D + kPad]
/// bf16 (query rows), global float atomics into rows `stride` floats apart; slots at or past `valid` are skipped;
/// `rows` null: row = slot.
template <int D>
__device__ __forceinline__ void add_slot_products(float* dst, int64_t stride, const int* rows, int valid, const bf16* T,
                                                  const bf16* X, int lane) {
  constexpr int ld = D + flash::kPad;
  const int g = lane >> 2;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    if (mt * 16 >= valid) break;
    uint32_t a[4];
    flash::ldmatrix_x4_trans(a, flash::a_rows_transposed(T, kTld, mt * 16, 0, lane));
    int dst_row[2];
    for (int half = 0; half < 2; ++half) {
      const int slot = mt * 16 + g + 8 * half;
      dst_row[half] = slot < valid ? (rows ? rows[slot] : slot) : -1;
    }
#pragma unroll
    for (int n0 = 0; n0 < D; n0 += 16) {
      uint32_t bf[4];
      flash::ldmatrix_x4_trans(bf, flash::b_rows_kn(X, ld, 0, n0, lane));
      float lo[4] = {}, hi[4] = {};
      flash::mma_bf16(lo, a, bf[0], bf[1]);
      flash::mma_bf16(hi, a, bf[2], bf[3]);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const bool active = dst_row[half] >= 0;
        atomic_add_row(active ? dst + dst_row[half] * stride + n0 : dst, lo[2 * half], lo[2 * half + 1], hi[2 * half],
                       hi[2 * half + 1], active, lane);
      }
    }
  }
}

/// A warp's C fragments (16 rows × 32 slot columns) into T [16][kTld] as bf16.
__device__ __forceinline__ void store_tile(bf16* T, const float (&c)[4][4], int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    store_pair(T + g * kTld + nt * 8 + 2 * t, c[nt][0], c[nt][1]);
    store_pair(T + (g + 8) * kTld + nt * 8 + 2 * t, c[nt][2], c[nt][3]);
  }
}

template <int D>
__global__ void __launch_bounds__(kBwdWarps * 32) small_backward_kernel(BwdParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kThreads = kBwdWarps * 32, ld = D + flash::kPad, kChunks = D / 8;
  const int N = p.N, m = p.m, topk = p.topk, np = padded_rows(N), lp = np + flash::kPad;
  const BwdLayout L(N, D, m);
  bf16 *Ks = reinterpret_cast<bf16*>(smem + L.k), *Vs = reinterpret_cast<bf16*>(smem + L.v),
       *Rs = reinterpret_cast<bf16*>(smem + L.r), *VHs = reinterpret_cast<bf16*>(smem + L.v_hat);
  float* dK = p.scratch + static_cast<int64_t>(blockIdx.x) * scratch_floats(N, D, m);  // global, L2-resident
  float *dV = dK + N * D, *dVH = dV + N * D;
  const int64_t C = static_cast<int64_t>(p.H) * D;
  float* dR = p.dr + static_cast<int64_t>(blockIdx.x / p.H) * m * C + (blockIdx.x % p.H) * D;  // rows C apart
  int *ek = reinterpret_cast<int*>(smem + L.keys), *order = reinterpret_cast<int*>(smem + L.order),
      *off = reinterpret_cast<int*>(smem + L.offsets), *items = reinterpret_cast<int*>(smem + L.items);
  float *lse_s = reinterpret_cast<float*>(smem + L.misc), *delta_s = lse_s + kSlots;
  int* n_items = reinterpret_cast<int*>(delta_s + kSlots);
  unsigned char* scratch = smem + L.scratch;
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;

  load_rows<D, kThreads>(Ks, p.k, b, h, N, np + 1, tid);
  load_rows<D, kThreads>(Vs, p.v, b, h, N, np + 1, tid);
  load_rows<D, kThreads>(Rs, p.r, b, h, m, kSlots, tid);
  load_rows<D, kThreads>(VHs, p.v_hat, b, h, m, kSlots, tid);
  flash::cp_async_commit();
  for (int i = tid; i < (2 * N + m) * D / 4; i += kThreads)
    reinterpret_cast<float4*>(dK)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int i = tid; i < m * D; i += kThreads) dR[(i / D) * C + i % D] = 0.f;
  for (int i = tid; i < m * kSlots; i += kThreads) {
    const int j = i / kSlots, s = i % kSlots;
    ek[i] = s < topk ? p.expert_keys[(static_cast<int64_t>(bh) * m + j) * topk + s] : np;
  }
  for (int i = tid; i < N; i += kThreads) order[i] = p.order[static_cast<int64_t>(bh) * N + i];
  for (int i = tid; i <= m; i += kThreads) off[i] = p.offsets[bh * (m + 1) + i];
  if (tid < kSlots) lse_s[tid] = tid < m ? p.lse_shared[bh * m + tid] * kLog2e : 0.f;
  flash::cp_async_wait<0>();
  __syncthreads();
  if (warp == 0) list_items(off, m, items, n_items, lane);
  __syncthreads();

  // The joint softmax's backward, one warp per (expert, 16 queries).
  {
    bf16* Qw = reinterpret_cast<bf16*>(scratch) + warp * (2 * 16 * ld + 2 * 16 * kTld);
    bf16 *dOw = Qw + 16 * ld, *T0 = dOw + 16 * ld, *T1 = T0 + 16 * kTld;
    for (int i = warp; i < *n_items; i += kBwdWarps) {
      const Item it(items, off, i);
      const int* keys = ek + it.expert * kSlots;
      for (int c = lane; c < 16 * kChunks; c += 32) {
        const int r = c / kChunks, col = (c % kChunks) * 8;
        const bool ok = r < it.count;
        const int n = ok ? order[it.first + r] : 0;
        flash::cp_async16(Qw + r * ld + col, p.q.row(b, h, n) + col, ok);
        flash::cp_async16(dOw + r * ld + col, p.dout.row(b, h, n) + col, ok);
      }
      flash::cp_async_commit();
      flash::cp_async_wait<0>();
      __syncwarp();
      // Δ_n = dO_n·O_n: lanes r and r + 16 take the two halves of row r.
      float delta = 0.f;
      {
        const int r = lane & 15, c0 = (lane >> 4) * (D / 2);
        if (r < it.count) {
          const bf16* o = p.out.row(b, h, order[it.first + r]) + c0;
          const bf16* d = dOw + r * ld + c0;
#pragma unroll
          for (int c = 0; c < D / 2; c += 2) {
            const float2 x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(o + c));
            const float2 y = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(d + c));
            delta += x.x * y.x + x.y * y.y;
          }
        }
        delta += __shfl_xor_sync(0xffffffffu, delta, 16);
      }
      const float dl[2] = {__shfl_sync(0xffffffffu, delta, g), __shfl_sync(0xffffffffu, delta, g + 8)};
      const bool rv[2] = {g < it.count, g + 8 < it.count};
      float l2[2];
      for (int half = 0; half < 2; ++half)
        l2[half] = rv[half] ? p.lse[static_cast<int64_t>(bh) * N + order[it.first + g + 8 * half]] * kLog2e : 0.f;

      uint32_t qa[D / 16][4], da[D / 16][4];
#pragma unroll
      for (int kc = 0; kc < D / 16; ++kc) {
        flash::ldmatrix_x4(qa[kc], flash::a_rows(Qw, ld, 0, kc * 16, lane));
        flash::ldmatrix_x4(da[kc], flash::a_rows(dOw, ld, 0, kc * 16, lane));
      }
      float pr[4][4] = {}, ps[4][4] = {}, dsr[4][4] = {}, dss[4][4] = {};
      slot_scores<D>(pr, ps, qa, Ks, Rs, keys, lane);    // logits, made probabilities below
      slot_scores<D>(dsr, dss, da, Vs, VHs, keys, lane);  // dP, made dS below
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int col = nt * 8 + 2 * t + (x & 1), half = x >> 1;
          const float a = rv[half] && col < topk ? exp2f(pr[nt][x] * p.scale_log2 - l2[half]) : 0.f;
          const float c = rv[half] && col < m ? exp2f(ps[nt][x] * p.shared_scale_log2 - l2[half]) : 0.f;
          dsr[nt][x] = a * (dsr[nt][x] - dl[half]) * p.scale;
          dss[nt][x] = c * (dss[nt][x] - dl[half]) * p.shared_scale;
          pr[nt][x] = a, ps[nt][x] = c;
        }
      // dq = dS_routed·K_I + dS_shared·R, written once per query.
      float dq[D / 8][4] = {};
      slot_values<D>(dq, dsr, dss, Ks, Rs, keys, lane);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        if (!rv[half]) continue;
        bf16* dst = p.dq.out_row(b, h, order[it.first + g + 8 * half]);
#pragma unroll
        for (int nt = 0; nt < D / 8; ++nt) store_pair(dst + nt * 8 + 2 * t, dq[nt][2 * half], dq[nt][2 * half + 1]);
      }
      // The slots' sums: dK_I += dS_routedᵀ·Q, dV_I += P_routedᵀ·dO, dR += dS_sharedᵀ·Q, dV̂ += P_sharedᵀ·dO.
      store_tile(T0, dsr, lane);
      store_tile(T1, pr, lane);
      __syncwarp();
      add_slot_products<D>(dK, D, keys, topk, T0, Qw, lane);
      add_slot_products<D>(dV, D, keys, topk, T1, dOw, lane);
      __syncwarp();
      store_tile(T0, dss, lane);
      store_tile(T1, ps, lane);
      __syncwarp();
      add_slot_products<D>(dR, C, nullptr, m, T0, Qw, lane);
      add_slot_products<D>(dVH, D, nullptr, m, T1, dOw, lane);
      __syncwarp();
    }
  }
  __syncthreads();

  // V̂ = softmax(scale·R·Kᵀ)·V backward: dP = dV̂·Vᵀ, dS = P∘(dP − dV̂·V̂)·scale; dR += dS·K, dK += dSᵀ·R,
  // dV += Pᵀ·dV̂.
  bf16 *Prk = reinterpret_cast<bf16*>(scratch), *dSrk = Prk + kSlots * lp, *dVHb = dSrk + kSlots * lp;
  for (int i = tid; i < kSlots * D; i += kThreads) {
    const int j = i / D, c = i % D;
    dVHb[j * ld + c] = __float2bfloat16(j < m ? __ldcg(dVH + j * D + c) : 0.f);
  }
  for (int j = warp; j < kSlots; j += kBwdWarps) {
    float x = 0.f;
    if (j < m)
      for (int c = lane; c < D; c += 32) x += __ldcg(dVH + j * D + c) * __bfloat162float(VHs[j * ld + c]);
    x = warp_sum(x);
    if (lane == 0) delta_s[j] = x;
  }
  __syncthreads();
  for (int item = warp; item < 2 * (np / 16); item += kBwdWarps) {
    const int m0 = (item & 1) * 16, n0 = (item >> 1) * 16;
    float s[2][4] = {}, dp[2][4] = {};
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
      uint32_t a[4], bf[4];
      flash::ldmatrix_x4(a, flash::a_rows(Rs, ld, m0, kc * 16, lane));
      flash::ldmatrix_x4(bf, flash::b_rows_nk(Ks, ld, n0, kc * 16, lane));
      flash::mma_bf16(s[0], a, bf[0], bf[1]);
      flash::mma_bf16(s[1], a, bf[2], bf[3]);
      flash::ldmatrix_x4(a, flash::a_rows(dVHb, ld, m0, kc * 16, lane));
      flash::ldmatrix_x4(bf, flash::b_rows_nk(Vs, ld, n0, kc * 16, lane));
      flash::mma_bf16(dp[0], a, bf[0], bf[1]);
      flash::mma_bf16(dp[1], a, bf[2], bf[3]);
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int j = m0 + g + 8 * (x >> 1), key = n0 + nt * 8 + 2 * t + (x & 1);
        const float pv = j < m && key < N ? exp2f(s[nt][x] * p.scale_log2 - lse_s[j]) : 0.f;
        dp[nt][x] = pv * (dp[nt][x] - delta_s[j]) * p.scale;
        s[nt][x] = pv;
      }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int col = n0 + nt * 8 + 2 * t;
      store_pair(Prk + (m0 + g) * lp + col, s[nt][0], s[nt][1]);
      store_pair(Prk + (m0 + g + 8) * lp + col, s[nt][2], s[nt][3]);
      store_pair(dSrk + (m0 + g) * lp + col, dp[nt][0], dp[nt][1]);
      store_pair(dSrk + (m0 + g + 8) * lp + col, dp[nt][2], dp[nt][3]);
    }
    uint32_t a[4];
    flash::a_fragment(a, dp[0], dp[1]);
#pragma unroll
    for (int c0 = 0; c0 < D; c0 += 16) {
      uint32_t bf[4];
      flash::ldmatrix_x4_trans(bf, flash::b_rows_kn(Ks, ld, n0, c0, lane));
      float lo[4] = {}, hi[4] = {};
      flash::mma_bf16(lo, a, bf[0], bf[1]);
      flash::mma_bf16(hi, a, bf[2], bf[3]);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int j = m0 + g + 8 * half;
        atomic_add_row(j < m ? dR + j * C + c0 : dR, lo[2 * half], lo[2 * half + 1], hi[2 * half], hi[2 * half + 1],
                       j < m, lane);
      }
    }
  }
  __syncthreads();
  // Each warp owns 16 keys: their routed sums (read past L1: other threads' atomics wrote them) plus V̂'s share,
  // stored as the bf16 dk and dv.
  for (int kt = warp; kt < np / 16; kt += kBwdWarps) {
    const int n0 = kt * 16;
    uint32_t ads[2][4], ap[2][4];
#pragma unroll
    for (int kc = 0; kc < 2; ++kc) {
      flash::ldmatrix_x4_trans(ads[kc], flash::a_rows_transposed(dSrk, lp, n0, kc * 16, lane));
      flash::ldmatrix_x4_trans(ap[kc], flash::a_rows_transposed(Prk, lp, n0, kc * 16, lane));
    }
#pragma unroll
    for (int c0 = 0; c0 < D; c0 += 16) {
      float klo[4] = {}, khi[4] = {}, vlo[4] = {}, vhi[4] = {};
#pragma unroll
      for (int kc = 0; kc < 2; ++kc) {
        uint32_t bf[4];
        flash::ldmatrix_x4_trans(bf, flash::b_rows_kn(Rs, ld, kc * 16, c0, lane));
        flash::mma_bf16(klo, ads[kc], bf[0], bf[1]);
        flash::mma_bf16(khi, ads[kc], bf[2], bf[3]);
        flash::ldmatrix_x4_trans(bf, flash::b_rows_kn(dVHb, ld, kc * 16, c0, lane));
        flash::mma_bf16(vlo, ap[kc], bf[0], bf[1]);
        flash::mma_bf16(vhi, ap[kc], bf[2], bf[3]);
      }
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int key = n0 + g + 8 * half;
        if (key >= N) continue;
        const int c = c0 + 2 * t;
        const float2 k0 = __ldcg(reinterpret_cast<const float2*>(dK + key * D + c)),
                     k8 = __ldcg(reinterpret_cast<const float2*>(dK + key * D + c + 8)),
                     v0 = __ldcg(reinterpret_cast<const float2*>(dV + key * D + c)),
                     v8 = __ldcg(reinterpret_cast<const float2*>(dV + key * D + c + 8));
        bf16 *k = p.dk.out_row(b, h, key) + c, *v = p.dv.out_row(b, h, key) + c;
        store_pair(k, k0.x + klo[2 * half], k0.y + klo[2 * half + 1]);
        store_pair(k + 8, k8.x + khi[2 * half], k8.y + khi[2 * half + 1]);
        store_pair(v, v0.x + vlo[2 * half], v0.y + vlo[2 * half + 1]);
        store_pair(v + 8, v8.x + vhi[2 * half], v8.y + vhi[2 * half + 1]);
      }
    }
  }
}

template <typename F>
bool dispatch_small_dim(int64_t d, F&& f) {
  switch (d) {
    case 32: f(std::integral_constant<int, 32>{}); return true;
    case 64: f(std::integral_constant<int, 64>{}); return true;
    default: return false;
  }
}

int max_shared_bytes() {
  int device = 0, bytes = 0;
  VT_CUDA_CHECK(cudaGetDevice(&device));
  VT_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return bytes;
}

}  // namespace

int64_t mita_small_backward_scratch(const MitaShape& s) {
  return s.B * s.H * scratch_floats(static_cast<int>(s.N), static_cast<int>(s.d), static_cast<int>(s.m));
}

bool mita_small_supported(const MitaShape& s) {
  if (!s.shared || !(s.d == 32 || s.d == 64) || s.m < 1 || s.m > kSlots || s.k < 1 || s.k > kSlots ||
      s.k > s.N || s.N > kMaxN || s.B * s.H > INT_MAX)
    return false;
  const int N = static_cast<int>(s.N), D = static_cast<int>(s.d), m = static_cast<int>(s.m);
  const int limit = max_shared_bytes();
  return FwdLayout(N, D, m).total <= limit && BwdLayout(N, D, m).total <= limit;
}

void mita_small_forward(const AttentionView& out, float* lse, float* lse_shared, void* v_hat, int32_t* expert_keys,
                        int32_t* experts, int32_t* order, int32_t* offsets, const AttentionView& q,
                        const AttentionView& k, const AttentionView& v, const AttentionView& r, const MitaShape& s,
                        cudaStream_t stream) {
  VT_CHECK(mita_small_supported(s), "[mita] the one-CTA MiTA kernels do not take N = ", s.N, ", m = ", s.m,
           ", k = ", s.k, ", head dim ", s.d);
  FwdParams p{rows_of(q), rows_of(k), rows_of(v), rows_of(r), rows_of(out), lse, lse_shared,
              static_cast<bf16*>(v_hat), expert_keys, experts, order, offsets, static_cast<int>(s.H),
              static_cast<int>(s.N), static_cast<int>(s.m), static_cast<int>(s.k), s.scale * kLog2e,
              s.shared_scale * kLog2e};
  dispatch_small_dim(s.d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    const int bytes = FwdLayout(p.N, D, p.m).total;
    auto launch = [&](auto kernel) {
      VT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      kernel<<<static_cast<unsigned>(s.B * s.H), kFwdWarps * 32, bytes, stream>>>(p);
      VT_CUDA_CHECK(cudaGetLastError());
    };
    if (p.N <= 256)
      launch(small_forward_kernel<D, 8>);
    else
      launch(small_forward_kernel<D, kMaxN / 32>);
  });
}

void mita_small_backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv, float* dr,
                         const AttentionView& dout, const AttentionView& q, const AttentionView& k,
                         const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                         const AttentionView& out, const float* lse, const float* lse_shared,
                         const MitaRoutingArrays& routing, const MitaShape& s, float* scratch,
                         cudaStream_t stream) {
  VT_CHECK(mita_small_supported(s), "[mita] the one-CTA MiTA kernels do not take N = ", s.N, ", m = ", s.m,
           ", k = ", s.k, ", head dim ", s.d);
  BwdParams p{rows_of(q), rows_of(k), rows_of(v), rows_of(r), rows_of(v_hat), rows_of(out), rows_of(dout),
              rows_of(dq), rows_of(dk), rows_of(dv), lse, lse_shared, routing.expert_keys, routing.order,
              routing.offsets, dr, scratch, static_cast<int>(s.H), static_cast<int>(s.N), static_cast<int>(s.m),
              static_cast<int>(s.k), s.scale, s.shared_scale, s.scale * kLog2e, s.shared_scale * kLog2e};
  dispatch_small_dim(s.d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    const int bytes = BwdLayout(p.N, D, p.m).total;
    VT_CUDA_CHECK(cudaFuncSetAttribute(small_backward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    small_backward_kernel<D><<<static_cast<unsigned>(s.B * s.H), kBwdWarps * 32, bytes, stream>>>(p);
    VT_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace vt::kernels::cuda
