// MiTA's shared branch in training, fused (see mita_shared.h). One block of 256 threads per (b, h), f32 math.
// Forward: scale·R in shared memory; K in chunks of 64 rows → the [m, N] logits in shared memory; a warp per row
// turns them into probabilities (also written to `probs`); V in chunks → V̂ accumulated in shared memory.
// Backward: chunks of 32 rows of p_shared, ds_shared, dout, q → dV̂ and the joint dR [m, d]; chunks of V → dP [m, N]
// in shared memory, turned into dS row by row (probs read back); chunks of K and probs → dR += dS·K, and
// dK += dSᵀ·R, dV += Pᵀ·dV̂ added straight into the gradient views (each element by one thread: no atomics).
// Every product is a block_gemm on shared memory: a warp computes a 4 × 32·TN tile, lane l holding columns
// l + 32c, so the B operand's loads are contiguous or (odd stride, padded rows) free of bank conflicts across the
// lanes, and A's loads are 16-byte warp broadcasts (4 values of k, or the tile's 4 rows), which keeps shared-memory
// traffic per FMA low. Rows of the [m, N] buffers and of the staged [rows, m] tiles are padded to multiples of 4
// floats for those loads.
#include "kernels/cuda/mita/mita_shared.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <type_traits>

#include "core/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_limits.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/device/row_reductions.cuh"

namespace vt::kernels::cuda {
namespace {

using device::from_acc;
using device::to_acc;
using device::warp_max;
using device::warp_sum;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTileRows = 4;   // rows of a warp's tile in block_gemm
constexpr int kFwdChunk = 64;  // key/value rows staged per step in the forward
constexpr int kBwdChunk = 32;  // rows staged per step in the backward

__device__ __forceinline__ int padded4(int n) { return (n + 3) & ~3; }

// ---- kernels ----
__device__ __forceinline__ float4 load_float4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// One k of a warp tile: acc[r][c] += A(i0 + r, k)·B(k, j0 + 32c), A's values given.
template <int TN>
__device__ __forceinline__ void tile_step(float (&acc)[kTileRows][TN], const float (&av)[kTileRows],
                                          const float* const (&bcol)[TN], int k, int bk) {
  float bv[TN];
#pragma unroll
  for (int c = 0; c < TN; ++c) bv[c] = bcol[c][k * bk];
#pragma unroll
  for (int r = 0; r < kTileRows; ++r)
#pragma unroll
    for (int c = 0; c < TN; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
}

// How block_gemm reads A 16 bytes at a time: A(i, k..k+3) (a row-major A: ak = 1; a and ai multiples of 4), or
// A(i0..i0+3, k) (a column-major A: ai = 1; a and ak multiples of 4; rows past M are read — they must lie inside the
// buffer — and dropped).
enum class ALoad { along_k, along_rows };

// C[M, Nc] = Σ_k A(i, k)·B(k, j) over shared memory, A(i, k) = a[i·ai + k·ak], B(k, j) = b[k·bk + j·bj];
// epi(i, j, value) receives each result, always from the same thread for the same (M, Nc, TN). The sum runs over k
// in order.
template <int TN, ALoad kMode, class Epi>
__device__ __forceinline__ void block_gemm(int M, int Nc, int K, const float* a, int ai, int ak, const float* b, int bk,
                                           int bj, Epi epi) {
  static_assert(kTileRows == 4, "a float4 holds a tile's rows");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int col_tiles = (Nc + 32 * TN - 1) / (32 * TN), tiles = (M + kTileRows - 1) / kTileRows * col_tiles;
  for (int tile = warp; tile < tiles; tile += kWarps) {
    const int i0 = tile / col_tiles * kTileRows, j0 = tile % col_tiles * 32 * TN + lane;
    const float* bcol[TN];
#pragma unroll
    for (int c = 0; c < TN; ++c) bcol[c] = b + min(j0 + 32 * c, Nc - 1) * bj;  // clamped: computed, not stored
    float acc[kTileRows][TN] = {};
    if constexpr (kMode == ALoad::along_rows) {
      for (int k = 0; k < K; ++k) {
        const float4 v = load_float4(a + i0 * ai + k * ak);
        const float av[kTileRows] = {v.x, v.y, v.z, v.w};
        tile_step<TN>(acc, av, bcol, k, bk);
      }
    } else {
      const float* arow[kTileRows];
#pragma unroll
      for (int r = 0; r < kTileRows; ++r) arow[r] = a + min(i0 + r, M - 1) * ai;
      int k = 0;
      for (; k + 4 <= K; k += 4) {
        float4 v[kTileRows];
#pragma unroll
        for (int r = 0; r < kTileRows; ++r) v[r] = load_float4(arow[r] + k);
        const float a0[kTileRows] = {v[0].x, v[1].x, v[2].x, v[3].x};
        const float a1[kTileRows] = {v[0].y, v[1].y, v[2].y, v[3].y};
        const float a2[kTileRows] = {v[0].z, v[1].z, v[2].z, v[3].z};
        const float a3[kTileRows] = {v[0].w, v[1].w, v[2].w, v[3].w};
        tile_step<TN>(acc, a0, bcol, k, bk);
        tile_step<TN>(acc, a1, bcol, k + 1, bk);
        tile_step<TN>(acc, a2, bcol, k + 2, bk);
        tile_step<TN>(acc, a3, bcol, k + 3, bk);
      }
      for (; k < K; ++k) {
        float av[kTileRows];
#pragma unroll
        for (int r = 0; r < kTileRows; ++r) av[r] = arow[r][k];
        tile_step<TN>(acc, av, bcol, k, bk);
      }
    }
#pragma unroll
    for (int r = 0; r < kTileRows; ++r)
#pragma unroll
      for (int c = 0; c < TN; ++c)
        if (i0 + r < M && j0 + 32 * c < Nc) epi(i0 + r, j0 + 32 * c, acc[r][c]);
  }
}

// Row 0 of (b, h) of a [B, H, rows, d] view.
template <typename T>
__device__ __forceinline__ T* head_of(const AttentionView& view, int64_t b, int64_t h) {
  return const_cast<T*>(static_cast<const T*>(view.data)) + b * view.batch_stride + h * view.head_stride;
}

// rows × D elements of a view (row stride `stride`) → dst[row·ld + t] in f32, times `mul`.
template <int D, typename T>
__device__ __forceinline__ void load_rows(float* dst, int ld, const T* src, int64_t stride, int rows, float mul = 1.f) {
  for (int e = threadIdx.x; e < rows * D; e += kThreads) {
    const int row = e / D, t = e % D;
    dst[row * ld + t] = to_acc(src[row * stride + t]) * mul;
  }
}

template <typename T>
__device__ __forceinline__ void add_to(T* p, float x) {
  *p = from_acc<T>(to_acc(*p) + x);
}

constexpr int cols_per_lane(int D) { return D >= 32 ? D / 32 : 1; }

template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    mita_shared_fwd_kernel(AttentionView v_hat, float* __restrict__ probs, AttentionView r, AttentionView k,
                           AttentionView v, MitaShape s) {
  constexpr int TD = cols_per_lane(D);
  extern __shared__ float smem[];
  const int m = static_cast<int>(s.m), N = static_cast<int>(s.N), ldn = padded4(N);
  const int64_t bh = blockIdx.x, b = bh / s.H, h = bh % s.H;
  float* acc = smem;                // [m, D]: scale·R, later V̂
  float* logits = acc + m * D;      // [m, ldn]: logits, then probabilities
  float* stage = logits + m * ldn;  // [kFwdChunk, D + 1]: K rows (padded: read across lanes by row), then V rows
  const T* kh = head_of<T>(k, b, h);
  const T* vh = head_of<T>(v, b, h);
  load_rows<D>(acc, D, head_of<T>(r, b, h), r.row_stride, m, s.scale);
  for (int n0 = 0; n0 < N; n0 += kFwdChunk) {
    const int rows = min(kFwdChunk, N - n0);
    __syncthreads();
    load_rows<D>(stage, D + 1, kh + n0 * k.row_stride, k.row_stride, rows);
    __syncthreads();
    block_gemm<kFwdChunk / 32, ALoad::along_k>(m, rows, D, acc, D, 1, stage, 1, D + 1,
                                               [&](int i, int j, float x) { logits[i * ldn + n0 + j] = x; });
  }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  float* prob = probs + bh * m * N;
  for (int i = threadIdx.x >> 5; i < m; i += kWarps) {
    float* row = logits + i * ldn;
    float mx = -INFINITY;
    for (int n = lane; n < N; n += 32) mx = fmaxf(mx, row[n]);
    mx = warp_max(mx);
    float sum = 0.f;
    for (int n = lane; n < N; n += 32) {
      const float e = expf(row[n] - mx);
      row[n] = e;
      sum += e;
    }
    const float inv = 1.f / warp_sum(sum);
    for (int n = lane; n < N; n += 32) {
      const float p = row[n] * inv;
      row[n] = p;
      prob[i * N + n] = p;
    }
  }
  for (int e = threadIdx.x; e < m * D; e += kThreads) acc[e] = 0.f;
  for (int n0 = 0; n0 < N; n0 += kFwdChunk) {
    const int rows = min(kFwdChunk, N - n0);
    __syncthreads();
    load_rows<D>(stage, D, vh + n0 * v.row_stride, v.row_stride, rows);
    __syncthreads();
    block_gemm<TD, ALoad::along_k>(m, D, rows, logits + n0, ldn, 1, stage, D, 1,
                                   [&](int i, int j, float x) { acc[i * D + j] += x; });
  }
  __syncthreads();
  T* out = head_of<T>(v_hat, b, h);
  for (int e = threadIdx.x; e < m * D; e += kThreads) out[e / D * v_hat.row_stride + e % D] = from_acc<T>(acc[e]);
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    mita_shared_bwd_kernel(AttentionView dk, AttentionView dv, float* __restrict__ dr, const float* __restrict__ probs,
                           const float* __restrict__ p_shared, const float* __restrict__ ds_shared,
                           const float* __restrict__ dvh_in, const float* __restrict__ dr_in, AttentionView dout,
                           AttentionView q, AttentionView r, AttentionView k, AttentionView v, MitaShape s) {
  constexpr int TD = cols_per_lane(D);
  constexpr int CH = kBwdChunk;
  extern __shared__ float smem[];
  const int m = static_cast<int>(s.m), N = static_cast<int>(s.N), ldn = padded4(N), mp = padded4(m);
  const int64_t bh = blockIdx.x, b = bh / s.H, h = bh % s.H;
  float* rs = smem;             // [m, D] R
  float* dvh = rs + m * D;      // [m, D] dV̂ = p_sharedᵀ·dout
  float* dR = dvh + m * D;      // [m, D] ds_sharedᵀ·q, then + dS·K
  float* ds = dR + m * D;       // [m, ldn] dP, then dS
  float* stage = ds + m * ldn;  // 2·CH·(mp + D) floats, reused by each phase
  const float* P = probs + bh * m * N;
  const float* ps = p_shared ? p_shared + bh * N * m : nullptr;
  const float* dss = ds_shared ? ds_shared + bh * N * m : nullptr;
  const T* douth = head_of<T>(dout, b, h);
  const T* qh = head_of<T>(q, b, h);
  const T* kh = head_of<T>(k, b, h);
  const T* vh = head_of<T>(v, b, h);
  load_rows<D>(rs, D, head_of<T>(r, b, h), r.row_stride, m);
  for (int e = threadIdx.x; e < m * D; e += kThreads) {
    dvh[e] = dvh_in ? dvh_in[bh * m * D + e] : 0.f;
    dR[e] = dr_in ? dr_in[bh * m * D + e] : 0.f;
  }

  // dV̂ = p_sharedᵀ·dout and dR = ds_sharedᵀ·q, over chunks of queries (given as dvh_in, dr_in otherwise).
  if (ps) {
    float* sp = stage;         // [CH, mp]
    float* sd = sp + CH * mp;  // [CH, mp]
    float* so = sd + CH * mp;  // [CH, D]
    float* sq = so + CH * D;   // [CH, D]
    for (int n0 = 0; n0 < N; n0 += CH) {
      const int rows = min(CH, N - n0);
      __syncthreads();
      for (int e = threadIdx.x; e < rows * m; e += kThreads) {
        const int n = e / m, j = e % m;
        sp[n * mp + j] = ps[n0 * m + e];
        sd[n * mp + j] = dss[n0 * m + e];
      }
      load_rows<D>(so, D, douth + n0 * dout.row_stride, dout.row_stride, rows);
      load_rows<D>(sq, D, qh + n0 * q.row_stride, q.row_stride, rows);
      __syncthreads();
      block_gemm<TD, ALoad::along_rows>(m, D, rows, sp, 1, mp, so, D, 1,
                                        [&](int i, int j, float x) { dvh[i * D + j] += x; });
      block_gemm<TD, ALoad::along_rows>(m, D, rows, sd, 1, mp, sq, D, 1,
                                        [&](int i, int j, float x) { dR[i * D + j] += x; });
    }
  }
  // dP = dV̂·Vᵀ.
  for (int n0 = 0; n0 < N; n0 += CH) {
    const int rows = min(CH, N - n0);
    __syncthreads();
    load_rows<D>(stage, D + 1, vh + n0 * v.row_stride, v.row_stride, rows);
    __syncthreads();
    block_gemm<CH / 32, ALoad::along_k>(m, rows, D, dvh, D, 1, stage, 1, D + 1,
                                        [&](int i, int j, float x) { ds[i * ldn + n0 + j] = x; });
  }
  __syncthreads();
  // dS = P ∘ (dP − rowsum(dP ∘ P))·scale, a warp per landmark.
  const int lane = threadIdx.x & 31;
  for (int i = threadIdx.x >> 5; i < m; i += kWarps) {
    const float* prow = P + i * N;
    float* row = ds + i * ldn;
    float dot = 0.f;
    for (int n = lane; n < N; n += 32) dot += row[n] * prow[n];
    dot = warp_sum(dot);
    for (int n = lane; n < N; n += 32) row[n] = prow[n] * (row[n] - dot) * s.scale;
  }
  // dR += dS·K, dK += dSᵀ·R, dV += Pᵀ·dV̂, over chunks of keys.
  {
    float* sk = stage;        // [CH, D] K rows
    float* sP = sk + CH * D;  // [m, CH] P columns
    T* dkh = head_of<T>(dk, b, h);
    T* dvh_out = head_of<T>(dv, b, h);
    for (int n0 = 0; n0 < N; n0 += CH) {
      const int rows = min(CH, N - n0);
      __syncthreads();
      load_rows<D>(sk, D, kh + n0 * k.row_stride, k.row_stride, rows);
      for (int e = threadIdx.x; e < m * rows; e += kThreads) {
        const int j = e / rows, n = e % rows;
        sP[j * CH + n] = P[j * N + n0 + n];
      }
      __syncthreads();
      block_gemm<TD, ALoad::along_k>(m, D, rows, ds + n0, ldn, 1, sk, D, 1,
                                     [&](int i, int j, float x) { dR[i * D + j] += x; });
      block_gemm<TD, ALoad::along_rows>(rows, D, m, ds + n0, 1, ldn, rs, D, 1,
                                        [&](int n, int t, float x) { add_to(dkh + (n0 + n) * dk.row_stride + t, x); });
      block_gemm<TD, ALoad::along_rows>(rows, D, m, sP, 1, CH, dvh, D, 1, [&](int n, int t, float x) {
        add_to(dvh_out + (n0 + n) * dv.row_stride + t, x);
      });
    }
  }
  __syncthreads();
  float* drh = dr + b * m * s.H * D + h * D;  // landmark j at drh[j·H·D + t]
  for (int e = threadIdx.x; e < m * D; e += kThreads) drh[e / D * s.H * D + e % D] = dR[e];
}

// ---- launchers ----
int64_t round_up4(int64_t n) { return (n + 3) / 4 * 4; }  // padded4 on the host

int64_t forward_smem_floats(const MitaShape& s) { return s.m * s.d + s.m * round_up4(s.N) + kFwdChunk * (s.d + 1); }

int64_t backward_smem_floats(const MitaShape& s) {
  return 3 * s.m * s.d + s.m * round_up4(s.N) + 2 * kBwdChunk * (round_up4(s.m) + s.d);
}

template <class Kernel>
int prepare(Kernel kernel, int64_t floats) {
  const int bytes = static_cast<int>(sizeof(float) * floats);
  VT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return bytes;
}

void check_supported(const MitaShape& s) {
  VT_CHECK(mita_shared_supported(s), "[mita_shared] no fused kernel for N = ", s.N, ", m = ", s.m, ", d = ", s.d,
           " (head dim 16, 32, 64 or 128 and m·N logits in shared memory)");
}

}  // namespace

bool mita_shared_supported(const MitaShape& s) {
  if (!(s.d == 16 || s.d == 32 || s.d == 64 || s.d == 128) || s.m < 1 || s.N < 1 || s.B < 1 || s.H < 1) return false;
  const int64_t floats = std::max(forward_smem_floats(s), backward_smem_floats(s));
  return floats * static_cast<int64_t>(sizeof(float)) <= max_dynamic_shared_memory();
}

void mita_shared_forward(DType dtype, const AttentionView& v_hat, float* probs, const AttentionView& r,
                         const AttentionView& k, const AttentionView& v, const MitaShape& s, cudaStream_t stream) {
  check_supported(s);
  device::dispatch_f32_bf16(dtype, "mita_shared", [&](auto tag) {
    using T = decltype(tag);
    device::dispatch_head_dim(s.d, "mita_shared", [&](auto dim) {
      constexpr int D = decltype(dim)::value;
      auto kernel = mita_shared_fwd_kernel<T, D>;
      const int smem = prepare(kernel, forward_smem_floats(s));
      kernel<<<static_cast<unsigned>(s.B * s.H), kThreads, smem, stream>>>(v_hat, probs, r, k, v, s);
      VT_CUDA_CHECK(cudaGetLastError());
    });
  });
}

void mita_shared_backward(DType dtype, const AttentionView& dk, const AttentionView& dv, float* dr, const float* probs,
                          const float* p_shared, const float* ds_shared, const AttentionView& dout,
                          const AttentionView& q, const AttentionView& r, const AttentionView& k,
                          const AttentionView& v, const MitaShape& s, cudaStream_t stream, const float* dvh_in,
                          const float* dr_in) {
  check_supported(s);
  VT_CHECK((p_shared && ds_shared) != (dvh_in && dr_in),
           "[mita_shared] the backward needs either p_shared and ds_shared or dvh and dr of the joint attention");
  device::dispatch_f32_bf16(dtype, "mita_shared", [&](auto tag) {
    using T = decltype(tag);
    device::dispatch_head_dim(s.d, "mita_shared", [&](auto dim) {
      constexpr int D = decltype(dim)::value;
      auto kernel = mita_shared_bwd_kernel<T, D>;
      const int smem = prepare(kernel, backward_smem_floats(s));
      kernel<<<static_cast<unsigned>(s.B * s.H), kThreads, smem, stream>>>(dk, dv, dr, probs, p_shared, ds_shared,
                                                                           dvh_in, dr_in, dout, q, r, k, v, s);
      VT_CUDA_CHECK(cudaGetLastError());
    });
  });
}

}  // namespace vt::kernels::cuda
