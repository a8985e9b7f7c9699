// Top-k per row (see mita_topk.h), on the float bits mapped to unsigned order. Rows of up to 4096 entries: a warp
// per row (topk_warp_kernel). Longer rows: one block per row,
//   fast path (k ≤ 2048): candidates in shared memory — the whole row when it has ≤ 8192 entries, else the
//     entries at or above a threshold estimated from 8192 evenly spaced samples (≈ 2k expected; one read of the
//     row, appends aggregated per warp with a ballot) — then an exact radix selection among them in shared memory
//     (ties to the lower index) and a bitonic sort of the k indices;
//   exact path (k > 2048, or an estimate that caught < k or > 8192 entries): four 8-bit radix passes over the row
//     find the k-th value T, then one read in index order (block scan) keeps the entries > T and the first ties.
#include <cub/block/block_scan.cuh>

#include <cuda_bf16.h>

#include <algorithm>
#include <climits>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/ordered_bits.cuh"
#include "kernels/cuda/mita/mita_topk.h"

namespace vt::kernels::cuda {

namespace {

constexpr int kCandidates = 8192, kFastMaxK = 2048;

using device::ordered_bits;

struct PairSum {
  __device__ int2 operator()(int2 a, int2 b) const { return make_int2(a.x + b.x, a.y + b.y); }
};

/// Calls f(i, bits) for every i of the row, all threads running the same number of iterations (valid = i < N),
/// so warp collectives inside f see full warps. 16-byte loads when the row allows.
template <int Threads, typename F>
__device__ __forceinline__ void for_each_bits(const float* row, int N, F&& f) {
  const int tid = threadIdx.x;
  if (N % 4 == 0) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    for (int base = 0; base < N; base += 4 * Threads) {
      const int i = base + 4 * tid;
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (i < N) v = row4[i / 4];
      f(i, i < N, ordered_bits(v.x));
      f(i + 1, i < N, ordered_bits(v.y));
      f(i + 2, i < N, ordered_bits(v.z));
      f(i + 3, i < N, ordered_bits(v.w));
    }
  } else {
    for (int base = 0; base < N; base += Threads) {
      const int i = base + tid;
      f(i, i < N, i < N ? ordered_bits(row[i]) : 0u);
    }
  }
}

/// value(i) gives entry i of the row (a load, or a recomputed score).
template <int Threads, typename Value>
__device__ void exact_select(Value&& value, int32_t* dst, int N, int k) {
  using Scan = cub::BlockScan<int2, Threads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ int hist[256];
  __shared__ uint32_t s_prefix;
  __shared__ int s_remaining;
  const int tid = threadIdx.x;
  uint32_t prefix = 0, mask = 0;
  int remaining = k;  // entries still to take among those matching the prefix
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = tid; i < 256; i += Threads) hist[i] = 0;
    __syncthreads();
    for (int i = tid; i < N; i += Threads) {
      const uint32_t u = ordered_bits(value(i));
      if ((u & mask) == prefix) atomicAdd(&hist[(u >> shift) & 255u], 1);
    }
    __syncthreads();
    if (tid == 0) {
      int above = 0, bin = 255;
      for (; bin > 0; --bin) {
        if (above + hist[bin] >= remaining) break;
        above += hist[bin];
      }
      s_prefix = prefix | (static_cast<uint32_t>(bin) << shift);
      s_remaining = remaining - above;
    }
    __syncthreads();
    prefix = s_prefix;
    remaining = s_remaining;
    mask |= 255u << shift;
    __syncthreads();
  }
  const uint32_t threshold = prefix;
  int carry_gt = 0, carry_eq = 0;
  for (int base = 0; base < N; base += Threads) {
    const int i = base + tid;
    const uint32_t u = i < N ? ordered_bits(value(i)) : 0u;
    const int2 flag = make_int2(i < N && u > threshold, i < N && u == threshold);
    int2 before, total;
    Scan(scan_storage).ExclusiveScan(flag, before, make_int2(0, 0), PairSum(), total);
    const int eq_rank = carry_eq + before.y;
    if (flag.x || (flag.y && eq_rank < remaining)) dst[carry_gt + before.x + min(eq_rank, remaining)] = i;
    carry_gt += total.x;
    carry_eq += total.y;
    __syncthreads();
  }
}

template <int Threads>
__global__ void __launch_bounds__(Threads)
    exact_kernel(const float* __restrict__ x, int32_t* __restrict__ out, int N, int k) {
  const float* row = x + static_cast<int64_t>(blockIdx.x) * N;
  exact_select<Threads>([&](int i) { return row[i]; }, out + static_cast<int64_t>(blockIdx.x) * k, N, k);
}

/// The `need`-th largest of bits[0..n) (shared memory): four 8-bit radix steps. Returns it in `threshold` and,
/// in `ties`, how many entries equal to it belong to the top `need`. All threads call it.
template <int Threads>
__device__ void smem_select(const uint32_t* bits, int n, int need, int* hist, uint32_t& threshold, int& ties) {
  __shared__ uint32_t s_prefix;
  __shared__ int s_need;
  const int tid = threadIdx.x, lane = tid % 32;
  uint32_t prefix = 0, mask = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = tid; i < 256; i += Threads) hist[i] = 0;
    __syncthreads();
    for (int c = tid; c < n; c += Threads) {
      const uint32_t u = bits[c];
      if ((u & mask) == prefix) atomicAdd(&hist[(u >> shift) & 255u], 1);
    }
    __syncthreads();
    if (tid < 32) {  // warp 0: lane l owns bins 255 - 8l .. 248 - 8l (the top first)
      int own = 0;
      for (int b = 255 - 8 * lane; b > 247 - 8 * lane; --b) own += hist[b];
      int incl = own;
      for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += y;
      }
      const int above = incl - own;
      if (above < need && incl >= need) {
        int cum = above, b = 255 - 8 * lane;
        for (; b > 248 - 8 * lane; --b) {
          if (cum + hist[b] >= need) break;
          cum += hist[b];
        }
        s_prefix = prefix | (static_cast<uint32_t>(b) << shift);
        s_need = need - cum;
      }
    }
    __syncthreads();
    prefix = s_prefix;
    need = s_need;
    mask |= 255u << shift;
    __syncthreads();
  }
  threshold = prefix;
  ties = need;
}

/// dst[0..k) = the indices of the k best of `count` candidates (bits, index) in shared memory, by value and then
/// lower index, ascending. `sel` has room for kFastMaxK ints; `hist` for 256. All threads call it.
template <int Threads>
__device__ void select_candidates(const uint32_t* cand_bits, const int* cand_index, int count, int k, int* sel,
                                  int* hist, int32_t* dst) {
  __shared__ int s_taken;
  const int tid = threadIdx.x;
  uint32_t threshold;
  int ties;
  smem_select<Threads>(cand_bits, count, k, hist, threshold, ties);
  if (tid == 0) s_taken = 0;
  __syncthreads();
  for (int c = tid; c < count; c += Threads) {
    const uint32_t u = cand_bits[c];
    if (u > threshold) {
      sel[atomicAdd(&s_taken, 1)] = cand_index[c];
    } else if (u == threshold) {
      int rank = 0;  // among the ties (few unless the row is mostly equal values)
      for (int j = 0; j < count; ++j) rank += cand_bits[j] == u && cand_index[j] < cand_index[c];
      if (rank < ties) sel[k - ties + rank] = cand_index[c];
    }
  }
  int P = 1;
  while (P < k) P <<= 1;
  __syncthreads();
  for (int i = k + tid; i < P; i += Threads) sel[i] = INT_MAX;
  __syncthreads();
  for (int size = 2; size <= P; size <<= 1)
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      for (int i = tid; i < P; i += Threads) {
        const int j = i ^ stride;
        if (j > i) {
          const int a = sel[i], b = sel[j];
          if ((a > b) == ((i & size) == 0)) sel[i] = b, sel[j] = a;
        }
      }
      __syncthreads();
    }
  for (int i = tid; i < k; i += Threads) dst[i] = sel[i];
}

/// Fast path: candidates in shared memory (the whole row when N ≤ cap; otherwise the entries at or above a
/// threshold estimated from a strided sample of the row, expecting about 2k of them), then an exact selection
/// among them, ties to the lower index, and a bitonic sort of the k indices. Falls back to exact_select when the
/// estimate catches fewer than k or more than cap entries.
template <int Threads>
__global__ void __launch_bounds__(Threads)
    topk_rows_kernel(const float* __restrict__ x, int32_t* __restrict__ out, int N, int k, int cap) {
  __shared__ int hist[256];
  __shared__ int s_count;
  extern __shared__ int smem_i[];
  uint32_t* cand_bits = reinterpret_cast<uint32_t*>(smem_i);  // [cap]
  int* cand_index = reinterpret_cast<int*>(cand_bits + cap);  // [cap]
  int* sel = cand_index + cap;                                // [kFastMaxK]
  const float* row = x + static_cast<int64_t>(blockIdx.x) * N;
  int32_t* dst = out + static_cast<int64_t>(blockIdx.x) * k;
  const int tid = threadIdx.x, lane = tid % 32;

  int count;
  if (N <= cap) {
    for (int i = tid; i < N; i += Threads) cand_bits[i] = ordered_bits(row[i]), cand_index[i] = i;
    count = N;
  } else {
    // The r-th largest of `cap` evenly spaced samples: about r·N/cap entries of the row lie at or above it.
    const int r = min(cap, static_cast<int>((2LL * k * cap + N - 1) / N) + 8);
    for (int i = tid; i < cap; i += Threads) cand_bits[i] = ordered_bits(row[static_cast<int64_t>(i) * N / cap]);
    __syncthreads();
    uint32_t estimate;
    int unused;
    smem_select<Threads>(cand_bits, cap, r, hist, estimate, unused);
    if (tid == 0) s_count = 0;
    __syncthreads();
    for_each_bits<Threads>(row, N, [&](int i, bool valid, uint32_t u) {
      const bool take = valid && u >= estimate;
      const unsigned ballot = __ballot_sync(0xffffffffu, take);
      if (!ballot) return;
      int base = 0;
      if (lane == __ffs(ballot) - 1) base = atomicAdd(&s_count, __popc(ballot));
      base = __shfl_sync(0xffffffffu, base, __ffs(ballot) - 1);
      const int at = base + __popc(ballot & ((1u << lane) - 1u));
      if (take && at < cap) cand_bits[at] = u, cand_index[at] = i;
    });
    __syncthreads();
    count = s_count;
  }
  __syncthreads();
  if (count >= k && count <= cap) return select_candidates<Threads>(cand_bits, cand_index, count, k, sel, hist, dst);
  exact_select<Threads>([&](int i) { return row[i]; }, dst, N, k);
}

/// Rows of at most 32·J entries (MiTA's N = 197 at 224², up to the LRA's 4K): a warp per row, entry lane + 32·j in
/// register j. A bitwise search finds the k-th largest value: each pass counts the entries at or above a candidate
/// in each lane (four independent sums, so the adds do not wait on each other) and adds the lanes with one warp
/// reduction; it stops early once exactly k entries reach the candidate (they are the top k). Every entry above the
/// result is taken and, of the entries equal to it, the lowest indices up to k, written in index order by prefix
/// counts over ballots. No shared memory, no block barriers.
template <int J>
__global__ void __launch_bounds__(128)
    topk_warp_kernel(const float* __restrict__ x, int32_t* __restrict__ out, int64_t rows, int N, int k) {
  const int64_t row = int64_t(blockIdx.x) * 4 + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const float* xr = x + row * N;
  uint32_t u[J];  // padding holds 0: every candidate t below has a bit set, so the counts never see it
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const int i = lane + 32 * j;
    u[j] = i < N ? ordered_bits(xr[i]) : 0u;
  }
  auto warp_count = [&](auto&& pred) {
    int c[4] = {0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < J; ++j) c[j & 3] += pred(j) ? 1 : 0;
    return static_cast<int>(__reduce_add_sync(0xffffffffu, static_cast<unsigned>(c[0] + c[1] + c[2] + c[3])));
  };
  uint32_t kth = 0;  // the largest t with at least k entries ≥ t (or, stopping early, one with exactly k)
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t t = kth | (1u << bit);
    const int c = warp_count([&](int j) { return u[j] >= t; });
    if (c >= k) kth = t;
    if (c == k) break;  // the k entries ≥ t are the top k, whatever the lower bits
  }
  const int above = warp_count([&](int j) { return lane + 32 * j < N && u[j] > kth; });
  const int ties_wanted = k - above;  // ≥ 0: 0 when kth is no entry's value
  int32_t* dst = out + row * k;
  int base = 0, ties_before = 0;
  const unsigned below = (1u << lane) - 1u;
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const bool valid = lane + 32 * j < N;
    const unsigned ties = __ballot_sync(0xffffffffu, valid && u[j] == kth);
    const bool take = valid && (u[j] > kth || (u[j] == kth && ties_before + __popc(ties & below) < ties_wanted));
    const unsigned taken = __ballot_sync(0xffffffffu, take);
    if (take) dst[base + __popc(taken & below)] = lane + 32 * j;
    base += __popc(taken);
    ties_before += __popc(ties);
  }
}

// Up to 4096 entries a row (128 registers a lane) the warp kernel beats a block per row: at N = 4096, k = 128 (the LRA
// setting, 8192 rows) the block kernel took 0.89 ms on the H200.
constexpr int kWarpMaxN = 4096;

void launch_warp(const float* x, int32_t* out, int64_t rows, int N, int k, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>((rows + 3) / 4);
  if (N <= 64) topk_warp_kernel<2><<<grid, 128, 0, stream>>>(x, out, rows, N, k);
  else if (N <= 128) topk_warp_kernel<4><<<grid, 128, 0, stream>>>(x, out, rows, N, k);
  else if (N <= 256) topk_warp_kernel<8><<<grid, 128, 0, stream>>>(x, out, rows, N, k);
  else if (N <= 512) topk_warp_kernel<16><<<grid, 128, 0, stream>>>(x, out, rows, N, k);
  else if (N <= 1024) topk_warp_kernel<32><<<grid, 128, 0, stream>>>(x, out, rows, N, k);
  else if (N <= 2048) topk_warp_kernel<64><<<grid, 128, 0, stream>>>(x, out, rows, N, k);
  else topk_warp_kernel<128><<<grid, 128, 0, stream>>>(x, out, rows, N, k);
  VT_CUDA_CHECK(cudaGetLastError());
}

template <int Threads>
void launch(const float* x, int32_t* out, int64_t rows, int N, int k, cudaStream_t stream) {
  const int cap = N <= kCandidates ? N : kCandidates;
  const size_t bytes = sizeof(int) * (2 * static_cast<size_t>(cap) + kFastMaxK);
  VT_CUDA_CHECK(cudaFuncSetAttribute(topk_rows_kernel<Threads>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
  topk_rows_kernel<Threads><<<static_cast<unsigned>(rows), Threads, bytes, stream>>>(x, out, N, k, cap);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void mita_topk_rows(const float* x, int32_t* out, int64_t rows, int N, int k, cudaStream_t stream) {
  VT_CHECK(k >= 1 && k <= N, "[mita_topk_rows] k = ", k, " must be in [1, N = ", N, "]");
  VT_CHECK(rows < (int64_t{1} << 31), "[mita_topk_rows] ", rows, " rows exceed the grid");
  if (rows == 0) return;
  if (N <= kWarpMaxN) {
    launch_warp(x, out, rows, N, k, stream);
  } else if (k > kFastMaxK) {  // the exact path alone (it needs no dynamic shared memory)
    exact_kernel<256><<<static_cast<unsigned>(rows), 256, 0, stream>>>(x, out, N, k);
    VT_CUDA_CHECK(cudaGetLastError());
  } else if (N > kCandidates) {
    launch<1024>(x, out, rows, N, k, stream);
  } else {
    launch<128>(x, out, rows, N, k, stream);
  }
}

}  // namespace vt::kernels::cuda

// ---- long-sequence inference: thresholds from samples, top-k from the collected candidates ----

namespace vt::kernels::cuda {

namespace {

constexpr int kSamples = kMitaSamples;

struct RowScore {  // r_j·k_n in f32 from bf16 operands, for the rows of one (b, h)
  const __nv_bfloat16* k;
  int64_t k_row;
  const float* r;  // r_j in shared memory, f32
  int d;
  __device__ float operator()(int n) const {
    const __nv_bfloat16* kn = k + static_cast<int64_t>(n) * k_row;
    float acc = 0.f;
    for (int c = 0; c < d; c += 2) {
      const float2 kv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(kn + c));
      acc += r[c] * kv.x + r[c + 1] * kv.y;
    }
    return acc;
  }
};

/// r_j into shared memory (f32) and the row's score functor.
__device__ RowScore row_score(const AttentionView& r, const AttentionView& k, const MitaShape& s, int64_t row,
                              float* r_smem) {
  const int64_t bh = row / s.m, j = row % s.m, b = bh / s.H, h = bh % s.H;
  const auto* rj =
      static_cast<const __nv_bfloat16*>(r.data) + b * r.batch_stride + h * r.head_stride + j * r.row_stride;
  for (int c = threadIdx.x; c < s.d; c += blockDim.x) r_smem[c] = __bfloat162float(rj[c]);
  __syncthreads();
  return {static_cast<const __nv_bfloat16*>(k.data) + b * k.batch_stride + h * k.head_stride, k.row_stride, r_smem,
          static_cast<int>(s.d)};
}

template <int Threads>
__global__ void __launch_bounds__(Threads)
    threshold_kernel(const float* __restrict__ samples, int ns, int rank, uint32_t* __restrict__ threshold) {
  __shared__ int hist[256];
  __shared__ uint32_t bits[kSamples];
  const float* row = samples + static_cast<int64_t>(blockIdx.x) * ns;
  for (int i = threadIdx.x; i < ns; i += Threads) bits[i] = ordered_bits(row[i]);
  __syncthreads();
  uint32_t t;
  int unused;
  smem_select<Threads>(bits, ns, rank, hist, t, unused);
  if (threadIdx.x == 0) threshold[blockIdx.x] = t;
}

template <int Threads>
__global__ void __launch_bounds__(Threads)
    candidates_topk_kernel(AttentionView r, AttentionView k, MitaShape s, MitaCandidates c, int32_t* out) {
  __shared__ float r_smem[128];
  __shared__ int hist[256];
  extern __shared__ int smem_i[];
  uint32_t* cand_bits = reinterpret_cast<uint32_t*>(smem_i);    // [cap]
  int* cand_index = reinterpret_cast<int*>(cand_bits + c.cap);  // [cap]
  int* sel = cand_index + c.cap;                                // [kFastMaxK]
  const int64_t row = blockIdx.x;
  const int kk = static_cast<int>(s.k), count = c.count[row];
  int32_t* dst = out + row * kk;
  if (count >= kk && count <= c.cap) {
    for (int i = threadIdx.x; i < count; i += Threads)
      cand_bits[i] = c.bits[row * c.cap + i], cand_index[i] = c.index[row * c.cap + i];
    __syncthreads();
    select_candidates<Threads>(cand_bits, cand_index, count, kk, sel, hist, dst);
    return;
  }
  const RowScore score = row_score(r, k, s, row, r_smem);
  exact_select<Threads>(score, dst, static_cast<int>(s.N), kk);
}

}  // namespace

void mita_thresholds_from_samples(const float* samples, int64_t rows, int ns, const MitaShape& s,
                                  const MitaCandidates& candidates, cudaStream_t stream) {
  VT_CHECK(ns >= 1 && ns <= kSamples, "[mita_route] ", ns, " samples per row, at most ", kSamples);
  // The rank-th largest of ns evenly spaced samples has about rank·N/ns keys at or above it: aim at 2k (+ slack).
  const int rank = static_cast<int>(std::min<int64_t>(ns, (2 * s.k * ns + s.N - 1) / s.N + 8));
  threshold_kernel<256><<<static_cast<unsigned>(rows), 256, 0, stream>>>(samples, ns, rank, candidates.threshold);
  VT_CUDA_CHECK(cudaGetLastError());
}

void mita_topk_from_candidates(const AttentionView& r, const AttentionView& k, const MitaShape& s,
                               const MitaCandidates& candidates, int32_t* out, cudaStream_t stream) {
  VT_CHECK(s.k <= kFastMaxK, "[mita_route] k = ", s.k, " above ", kFastMaxK, " for the candidate top-k");
  const int64_t rows = s.B * s.H * s.m;
  const size_t bytes = sizeof(int) * (2 * static_cast<size_t>(candidates.cap) + kFastMaxK);
  VT_CUDA_CHECK(cudaFuncSetAttribute(candidates_topk_kernel<256>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
  candidates_topk_kernel<256><<<static_cast<unsigned>(rows), 256, bytes, stream>>>(r, k, s, candidates, out);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
