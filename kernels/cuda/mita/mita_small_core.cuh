// The pieces both kernels of the one-CTA MiTA core share (mita_small.h; mita_small_fwd.cu, mita_small_bwd.cu): the
// slot limits, the operand rows, the shared-memory layouts the host sizes launches with, and the warp tile products
// over an expert's gathered slots (mma.m16n8k16 through flash_attention_device.cuh). Shared-memory rows are padded by
// 8 elements; row `np` (N rounded up to 16) of K, V and Q is a zero row that the gathers of unused slots and query
// rows read.
#pragma once
#include <cuda_bf16.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device/row_reductions.cuh"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/flash_attention_device.cuh"
#include "kernels/cuda/mita/mita_small.h"

namespace vt::kernels::cuda::mita_small_core {

using flash::bf16;

constexpr int kSlots = 32;  // m and k at most; slot tiles are 2 × 16
constexpr int kMaxN = 512;  // the top-k keeps 16 scores per lane
// At DeiT-S both kernels fit two CTAs an SM: the backward at 128 registers a thread and ~110 KB of shared memory.
constexpr int kFwdWarps = 8, kBwdWarps = 8;
static_assert(kBwdWarps % 2 == 0, "V̂'s backward gives each warp one of the two landmark tiles");
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

struct Rows {  // a [B, H, rows, D] bf16 operand
  const bf16* data;
  int64_t b, h, n;
  __device__ const bf16* row(int bb, int hh, int r) const { return data + bb * b + hh * h + r * n; }
  __device__ bf16* out_row(int bb, int hh, int r) const { return const_cast<bf16*>(row(bb, hh, r)); }
};

inline Rows rows_of(const AttentionView& v) {
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
  int k, v, r, v_hat, keys, order, row_terms, offsets, items, misc, scratch, total;
  __host__ __device__ BwdLayout(int N, int D, int m) {
    const int np = padded_rows(N), ld = D + flash::kPad, lp = np + flash::kPad;
    int at = 0;
    k = take(at, (np + 1) * ld * 2);
    v = take(at, (np + 1) * ld * 2);
    r = take(at, kSlots * ld * 2);
    v_hat = take(at, kSlots * ld * 2);
    keys = take(at, m * kSlots * 4);
    order = take(at, np * 4);
    row_terms = take(at, 2 * np * 4);  // each query's Δ = dO·O and joint log-sum-exp (base 2)
    offsets = take(at, (kSlots + 1) * 4);
    items = take(at, (np / 16 + kSlots) * 4);
    misc = take(at, 2 * kSlots * 4 + 16);  // V̂'s lse and row terms, the item count
    // One region three ways: per warp its Q and dO rows (the experts' pass), then P and dS of V̂'s softmax and dV̂
    // in bf16 (V̂'s pass and the keys' pass, with each warp's two [16][8] buffers of query rows), then the pooling's
    // terms. The keys' pass keeps its f32 dK, dV sums (half the columns at a time) where K and V were.
    const int per_warp = 2 * 16 * ld * 2;
    const int shared_pass = 2 * kSlots * lp * 2 + kSlots * ld * 2 + kBwdWarps * 2 * 16 * 8 * 2;
    const int pool_pass = kSlots * (D + 1) * 4 + 2 * kMaxN * 4;  // the pooling's terms, bin sizes and spans
    const int passes = kBwdWarps * per_warp > shared_pass ? kBwdWarps * per_warp : shared_pass;
    scratch = take(at, passes > pool_pass ? passes : pool_pass);
    total = at;
  }
};

/// Bytes of the f32 dK, dV sums of half the columns, [2][np][D / 2 + 4]: they fit where K and V were.
__host__ __device__ constexpr int key_sums_bytes(int N, int D) { return 2 * padded_rows(N) * (D / 2 + 4) * 4; }

/// The most work items (expert, 16 queries) of a (b, h): Σ ⌈count / 16⌉ ≤ N / 16 + m.
__host__ __device__ constexpr int max_items(int N) { return padded_rows(N) / 16 + kSlots; }

/// The backward's global scratch per (b, h), in floats: dV̂ [m][D] f32, each query's dS and P over the shared slots
/// ([N][kSlots] bf16 each: N·kSlots floats of room for the two), then each item's routed dS and P as MMA fragments
/// (2 KB an item). Float atomics in shared memory are compare-and-swap loops (9 ms a layer at DeiT-S); global ones
/// are single L2 reductions, and a (b, h)'s scratch stays in L2 while its CTA runs.
__host__ __device__ inline int64_t scratch_floats(int N, int D, int m) {
  return static_cast<int64_t>(m) * D + static_cast<int64_t>(N) * kSlots + static_cast<int64_t>(max_items(N)) * 512;
}

using device::warp_max;
using device::warp_sum;
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

/// MiTA's landmark bins (mita_landmark_pool's rule, kernels/cuda/mita/landmark_pool.cu): landmark j averages the q
/// rows of its bin of tokens first .. first + L − 1; grid > 0: those tokens form a grid × grid patch grid cut into
/// pool × pool bins (j = bin row · pool + bin column), else m 1-D bins.
struct PoolBins {
  int first, L, grid, pool, m;
  __device__ static int start(int i, int in, int out) { return (i * in) / out; }
  __device__ static int end(int i, int in, int out) { return ((i + 1) * in + out - 1) / out; }
  /// Bin j: grid rows [y0, y1) × columns [x0, x1) of a grid `width` tokens wide.
  __device__ void bin(int j, int& y0, int& y1, int& x0, int& x1, int& width) const {
    if (grid > 0) {
      const int r = j / pool, c = j % pool;
      y0 = start(r, grid, pool), y1 = end(r, grid, pool), x0 = start(c, grid, pool), x1 = end(c, grid, pool);
      width = grid;
    } else {
      y0 = 0, y1 = 1, x0 = start(j, L, m), x1 = end(j, L, m), width = L;
    }
  }
};

inline PoolBins pool_bins(const MitaSmallPool& p, const MitaShape& s) {
  return {p.first, p.L, p.grid, p.pool, static_cast<int>(s.m)};
}

/// The landmarks of (b, h) pooled from q into Rs [kSlots][D + kPad] (rows m.. zero) and into `r` (global). Each
/// sum runs in landmark_pool.cu's order (8 slices of the bin's tokens, each summed, then added in slice order), so
/// the landmarks have the bits the separate pooling kernel gives them. A thread owns 4 columns of one landmark and
/// reads its bin's tokens 8 at a time, one per slice, so 8 loads are in flight instead of one.
template <int D, int kThreads>
__device__ __forceinline__ void pool_landmarks(bf16* Rs, const Rows& r, const Rows& q, const PoolBins& pb, int b, int h,
                                               int tid) {
  constexpr int kChunks = D / 4, ld = D + flash::kPad;
  for (int c = tid; c < kSlots * kChunks; c += kThreads) {
    const int j = c / kChunks, col = (c % kChunks) * 4;
    alignas(8) bf16 o[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) o[e] = __float2bfloat16(0.f);
    if (j < pb.m) {
      int y0, y1, x0, x1, width;
      pb.bin(j, y0, y1, x0, x1, width);
      const int w = x1 - x0, count = (y1 - y0) * w;
      float acc[8][4] = {};
      for (int i0 = 0; i0 < count; i0 += 8) {
        uint2 v[8];
#pragma unroll
        for (int s = 0; s < 8; ++s) {
          const int i = i0 + s;
          const int token = pb.first + (y0 + i / w) * width + x0 + i % w;
          v[s] = i < count ? *reinterpret_cast<const uint2*>(q.row(b, h, token) + col) : make_uint2(0u, 0u);
        }
#pragma unroll
        for (int s = 0; s < 8; ++s) {
          if (i0 + s >= count) continue;
          const bf16* e4 = reinterpret_cast<const bf16*>(&v[s]);
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[s][e] += __bfloat162float(e4[e]);
        }
      }
      const float inv = 1.0f / static_cast<float>(count);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float total = acc[0][e];
#pragma unroll
        for (int s = 1; s < 8; ++s) total += acc[s][e];
        o[e] = __float2bfloat16(total * inv);
      }
      *reinterpret_cast<uint2*>(r.out_row(b, h, j) + col) = *reinterpret_cast<const uint2*>(o);
    }
    *reinterpret_cast<uint2*>(Rs + j * ld + col) = *reinterpret_cast<const uint2*>(o);
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
__device__ __forceinline__ void slot_scores(float (&routed)[4][4], float (&shared)[4][4],
                                            const uint32_t (&a)[D / 16][4], const bf16* K, const bf16* R,
                                            const int* keys, int lane) {
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

/// Runs f(std::integral_constant<int, D>) for head dim d ∈ {32, 64}; false for any other.
template <typename F>
bool dispatch_small_dim(int64_t d, F&& f) {
  switch (d) {
    case 32: f(std::integral_constant<int, 32>{}); return true;
    case 64: f(std::integral_constant<int, 64>{}); return true;
    default: return false;
  }
}

}  // namespace vt::kernels::cuda::mita_small_core
