// Fused LayerNorm on CUDA, a warp per row, two-pass statistics in f32 (mean, then Σ(x − mean)², so a large mean
// costs no digits). Two paths per direction:
// - packed (C ≤ 1024, C a multiple of the vector width, 16-byte aligned rows): each lane loads its slice of the
//   row once with 16-byte loads and keeps it in registers; the backward also keeps each warp's dw/db sums in
//   registers over all its rows and adds the block's warps in warp order at the end.
// - generic (any C): the row re-read from L1/L2; for dw/db each block takes tiles of kWarps rows and, after a
//   tile's dx, each thread adds the tile's rows into the columns it owns (shared memory when 2·C floats fit, else
//   the block's slice of global scratch).
// Both write per-block partials [blocks][2C]; a finalize kernel sums them per column, the blocks split over row
// groups and added by a fixed tree. Every sum has a fixed order: deterministic, no atomics.
// The backward's optional dres (a gradient already waiting for x, e.g. the residual branch's) is added into dx.
#include <algorithm>
#include <type_traits>

#include <cuda_bf16.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/device/row_reductions.cuh"
#include "kernels/cuda/layer_norm.h"

namespace vt::kernels::cuda {

namespace {

constexpr int kWarps = 8;  // rows per block (forward) and per tile (backward)
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxBackwardBlocks = 528;  // 4 per SM on an H200; bounds the partial-sum scratch
constexpr int64_t kSharedAccMax = 48 * 1024 / (2 * sizeof(float));  // C up to which dw/db partials fit in smem
constexpr int kMaxLaneElems = 32;  // packed path: row elements per lane held in registers (C ≤ 32·32)
constexpr int kPackedMaxC = 32 * kMaxLaneElems;
constexpr int kFinCols = 32, kFinGroups = 32;  // finalize block: columns × row groups

using device::aligned_to;
using device::from_acc;
using device::to_acc;
using device::Vec;
using device::warp_sum;

// ---- kernels ----

template <typename T, int V>
__device__ __forceinline__ void load_acc(float (&out)[V], const T* p) {
  const Vec<T, V> v = *reinterpret_cast<const Vec<T, V>*>(p);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = to_acc(v.v[i]);
}

template <typename T, int V>
__device__ __forceinline__ void store_acc(T* p, const float (&in)[V]) {
  Vec<T, V> v;
#pragma unroll
  for (int i = 0; i < V; ++i) v.v[i] = from_acc<T>(in[i]);
  *reinterpret_cast<Vec<T, V>*>(p) = v;
}

// Packed forward: lane holds vectors j = lane + 32·k (k < K) of V elements of its row. With `add` (Ta), the row
// is first x + add, rounded to Tx and written to `sum` (a residual add fused with the next LayerNorm).
template <typename Tx, typename Ty, int V, int K, typename Ta = Tx>
__global__ void layer_norm_fwd_packed_kernel(Ty* y, float* mean, float* rstd, const Tx* x, const float* w,
                                             const float* b, int64_t rows, int C, float eps, const Ta* add = nullptr,
                                             Tx* sum = nullptr) {
  const int64_t row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32, nvec = C / V;
  float v[K][V];
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int j = lane + 32 * k;
    if (j < nvec) {
      load_acc<Tx, V>(v[k], x + row * C + j * V);
      if (add) {
        float a[V];
        load_acc<Ta, V>(a, add + row * C + j * V);
#pragma unroll
        for (int i = 0; i < V; ++i) v[k][i] = to_acc(from_acc<Tx>(v[k][i] + a[i]));
        store_acc<Tx, V>(sum + row * C + j * V, v[k]);
      }
#pragma unroll
      for (int i = 0; i < V; ++i) s += v[k][i];
    }
  }
  const float mu = warp_sum(s) / static_cast<float>(C);
  float q = 0.f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (lane + 32 * k < nvec) {
#pragma unroll
      for (int i = 0; i < V; ++i) q += (v[k][i] - mu) * (v[k][i] - mu);
    }
  }
  const float rs = rsqrtf(warp_sum(q) / static_cast<float>(C) + eps);
  if (lane == 0) mean[row] = mu, rstd[row] = rs;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int j = lane + 32 * k;
    if (j >= nvec) continue;
    float o[V], wv[V], bv[V];
    if (w) load_acc<float, V>(wv, w + j * V);
    if (b) load_acc<float, V>(bv, b + j * V);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      o[i] = (v[k][i] - mu) * rs;
      if (w) o[i] *= wv[i];
      if (b) o[i] += bv[i];
    }
    store_acc<Ty, V>(y + row * C + j * V, o);
  }
}

template <typename Tx, typename Ty>
__global__ void layer_norm_fwd_kernel(Ty* y, float* mean, float* rstd, const Tx* x, const float* w, const float* b,
                                      int64_t rows, int64_t C, float eps) {
  const int64_t row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const Tx* xr = x + row * C;
  Ty* yr = y + row * C;
  float s = 0.f;
  for (int64_t c = lane; c < C; c += 32) s += to_acc(xr[c]);
  const float mu = warp_sum(s) / static_cast<float>(C);
  float v = 0.f;
  for (int64_t c = lane; c < C; c += 32) {
    const float d = to_acc(xr[c]) - mu;
    v += d * d;
  }
  const float rs = rsqrtf(warp_sum(v) / static_cast<float>(C) + eps);
  if (lane == 0) mean[row] = mu, rstd[row] = rs;
  for (int64_t c = lane; c < C; c += 32) {
    float o = (to_acc(xr[c]) - mu) * rs;
    if (w) o *= w[c];
    if (b) o += b[c];
    yr[c] = from_acc<Ty>(o);
  }
}

// Packed backward: dx (+ dres) for the rows of each warp (rows tile·kWarps + warp); the warp's dw/db sums stay
// in registers and the block's warps are added in warp order into its partial row.
template <typename Tx, typename Tdy, int V, int K>
__global__ void __launch_bounds__(kThreads)
    layer_norm_bwd_packed_kernel(Tx* dx, const Tx* dres, float* partial, const Tdy* dy, const Tx* x, const float* mean,
                                 const float* rstd, const float* w, int64_t rows, int C) {
  __shared__ float acc[2 * kPackedMaxC];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nvec = C / V;
  float sw[K][V] = {}, sb[K][V] = {};  // Σ dy·x̂, Σ dy over this warp's rows
  const int64_t tiles = (rows + kWarps - 1) / kWarps;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t row = tile * kWarps + warp;
    if (row >= rows) continue;  // the same for the whole warp
    const float m = mean[row], r = rstd[row];
    float xh[K][V], g[K][V];
    float sg = 0.f, sgx = 0.f;  // Σ g, Σ g·x̂ with g = dy·w
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = lane + 32 * k;
      if (j >= nvec) continue;
      float d[V], wv[V];
      load_acc<Tx, V>(xh[k], x + row * C + j * V);
      load_acc<Tdy, V>(d, dy + row * C + j * V);
      if (w) load_acc<float, V>(wv, w + j * V);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        xh[k][i] = (xh[k][i] - m) * r;
        sw[k][i] += d[i] * xh[k][i];
        sb[k][i] += d[i];
        g[k][i] = w ? d[i] * wv[i] : d[i];
        sg += g[k][i];
        sgx += g[k][i] * xh[k][i];
      }
    }
    if (!dx) continue;
    const float a = warp_sum(sg) / static_cast<float>(C), bq = warp_sum(sgx) / static_cast<float>(C);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = lane + 32 * k;
      if (j >= nvec) continue;
      float o[V], res[V];
      if (dres) load_acc<Tx, V>(res, dres + row * C + j * V);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        o[i] = r * (g[k][i] - a - xh[k][i] * bq);
        if (dres) o[i] = res[i] + o[i];
      }
      store_acc<Tx, V>(dx + row * C + j * V, o);
    }
  }
  if (!partial) return;  // uniform over the block
  for (int c = threadIdx.x; c < 2 * C; c += kThreads) acc[c] = 0.f;
  __syncthreads();
  for (int turn = 0; turn < kWarps; ++turn) {
    if (warp == turn) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int j = lane + 32 * k;
        if (j >= nvec) continue;
#pragma unroll
        for (int i = 0; i < V; ++i) acc[j * V + i] += sw[k][i], acc[C + j * V + i] += sb[k][i];
      }
    }
    __syncthreads();
  }
  float* out = partial + int64_t(blockIdx.x) * 2 * C;
  for (int c = threadIdx.x; c < 2 * C; c += kThreads) out[c] = acc[c];
}

// dx for the row of each warp, then (when dw/db are wanted) the tile's rows added into this block's partials.
template <typename Tx, typename Tdy>
__global__ void layer_norm_bwd_kernel(Tx* dx, const Tx* dres, float* partial, const Tdy* dy, const Tx* x,
                                      const float* mean, const float* rstd, const float* w, int64_t rows, int64_t C,
                                      bool shared_acc) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* acc = nullptr;  // [2C]: Σ dy·x̂ then Σ dy, for this block
  if (partial) {
    acc = shared_acc ? smem : partial + int64_t(blockIdx.x) * 2 * C;
    for (int64_t c = threadIdx.x; c < 2 * C; c += kThreads) acc[c] = 0.f;
    __syncthreads();  // acc[C + c] is zeroed by another thread than the one that owns column c
  }
  const int64_t tiles = (rows + kWarps - 1) / kWarps;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {  // block-uniform loop
    const int64_t row = tile * kWarps + warp;
    if (dx && row < rows) {
      const Tx* xr = x + row * C;
      const Tdy* dyr = dy + row * C;
      const float m = mean[row], r = rstd[row];
      float sg = 0.f, sgx = 0.f;  // Σ g, Σ g·x̂
      for (int64_t c = lane; c < C; c += 32) {
        const float g = to_acc(dyr[c]) * (w ? w[c] : 1.f);
        sg += g;
        sgx += g * ((to_acc(xr[c]) - m) * r);
      }
      const float a = warp_sum(sg) / static_cast<float>(C), bq = warp_sum(sgx) / static_cast<float>(C);
      Tx* dxr = dx + row * C;
      for (int64_t c = lane; c < C; c += 32) {
        const float g = to_acc(dyr[c]) * (w ? w[c] : 1.f);
        float o = r * (g - a - (to_acc(xr[c]) - m) * r * bq);
        if (dres) o = to_acc(dres[row * C + c]) + o;
        dxr[c] = from_acc<Tx>(o);
      }
    }
    if (acc) {
      const int64_t r0 = tile * kWarps, r1 = min(rows, r0 + kWarps);
      for (int64_t c = threadIdx.x; c < C; c += kThreads) {
        float sw = acc[c], sb = acc[C + c];
        for (int64_t row2 = r0; row2 < r1; ++row2) {
          const float g = to_acc(dy[row2 * C + c]);
          sw += g * ((to_acc(x[row2 * C + c]) - mean[row2]) * rstd[row2]);
          sb += g;
        }
        acc[c] = sw, acc[C + c] = sb;
      }
    }
  }
  if (acc && shared_acc) {
    __syncthreads();
    float* out = partial + int64_t(blockIdx.x) * 2 * C;
    for (int64_t c = threadIdx.x; c < 2 * C; c += kThreads) out[c] = acc[c];
  }
}

// Column col of the partials [nblocks][2C] (dw for col < C, db after): thread row ty sums blocks ty, ty + 32, …
// in order, then the 32 sums are added by a fixed tree in shared memory.
__global__ void layer_norm_wb_finalize_kernel(float* dw, float* db, const float* partial, int nblocks, int64_t C) {
  __shared__ float sums[kFinGroups][kFinCols + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = int64_t(blockIdx.x) * kFinCols + tx;
  float s = 0.f;
  if (col < 2 * C)
    for (int k = ty; k < nblocks; k += kFinGroups) s += partial[int64_t(k) * 2 * C + col];
  sums[ty][tx] = s;
  __syncthreads();
  for (int h = kFinGroups / 2; h > 0; h /= 2) {
    if (ty < h) sums[ty][tx] += sums[ty + h][tx];
    __syncthreads();
  }
  if (ty != 0 || col >= 2 * C) return;
  if (col < C) {
    if (dw) dw[col] = sums[0][tx];
  } else if (db) {
    db[col - C] = sums[0][tx];
  }
}

// ---- launchers ----

int backward_blocks(int64_t rows) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((rows + kWarps - 1) / kWarps, kMaxBackwardBlocks)));
}

// Calls f(integral_constant<int, K>) with K the vectors of V elements per lane a row of C needs (a power of two,
// K·V ≤ kMaxLaneElems); false when C is too wide or not a multiple of V.
template <int V, typename F>
bool with_lane_vectors(int64_t C, F&& f) {
  if (C % V != 0 || C > kPackedMaxC) return false;
  const int64_t per_lane = (C / V + 31) / 32;
  if (per_lane <= 1) return f(std::integral_constant<int, 1>()), true;
  if (per_lane <= 2) return f(std::integral_constant<int, 2>()), true;
  if (per_lane <= 4) return f(std::integral_constant<int, 4>()), true;
  if constexpr (8 * V <= kMaxLaneElems) {
    if (per_lane <= 8) return f(std::integral_constant<int, 8>()), true;
  }
  return false;
}

// Elements per packed vector: 16 bytes of the narrower of two storage types.
template <typename A, typename B>
constexpr int packed_width() {
  return 16 / static_cast<int>(std::min(sizeof(A), sizeof(B)));
}

// Blocks of kThreads of `kernel` that the device holds at once (at least one SM's worth).
int resident_blocks(const void* kernel) {
  int per_sm = 0;
  VT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  return std::max(1, per_sm) * device::sm_count();
}

template <typename T>
bool vec_aligned(const T* p, int V) {
  return !p || aligned_to(p, sizeof(T) * V);
}

}  // namespace

void layer_norm_forward(DType x_dtype, DType y_dtype, void* y, float* mean, float* rstd, const void* x, const float* w,
                        const float* b, int64_t rows, int64_t C, double eps, cudaStream_t stream) {
  if (rows == 0 || C == 0) return;
  device::dispatch_f32_bf16_pair(x_dtype, y_dtype, "layer_norm", [&](auto xt, auto yt) {
    using Tx = decltype(xt);
    using Ty = decltype(yt);
    constexpr int V = 16 / sizeof(Tx);
    const Tx* xp = static_cast<const Tx*>(x);
    Ty* yp = static_cast<Ty*>(y);
    const int grid = static_cast<int>((rows + kWarps - 1) / kWarps);
    const bool aligned = vec_aligned(xp, V) && vec_aligned(yp, V) && vec_aligned(w, V) && vec_aligned(b, V);
    const bool packed = aligned && with_lane_vectors<V>(C, [&](auto k) {
                          layer_norm_fwd_packed_kernel<Tx, Ty, V, decltype(k)::value><<<grid, kThreads, 0, stream>>>(
                              yp, mean, rstd, xp, w, b, rows, static_cast<int>(C), static_cast<float>(eps));
                        });
    if (!packed)
      layer_norm_fwd_kernel<Tx, Ty>
          <<<grid, kThreads, 0, stream>>>(yp, mean, rstd, xp, w, b, rows, C, static_cast<float>(eps));
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

bool add_layer_norm_forward(DType add_dtype, DType y_dtype, float* sum, void* y, float* mean, float* rstd,
                            const float* x, const void* add, const float* w, const float* b, int64_t rows, int64_t C,
                            double eps, cudaStream_t stream) {
  constexpr int V = 4;  // 16 bytes of the f32 stream
  if (rows == 0 || C == 0) return true;
  if (!vec_aligned(x, V) || !vec_aligned(sum, V) || !vec_aligned(w, V) || !vec_aligned(b, V) ||
      !aligned_to(add, dtype_size(add_dtype) * V) || !aligned_to(y, dtype_size(y_dtype) * V))
    return false;
  bool launched = false;
  device::dispatch_f32_bf16_pair(add_dtype, y_dtype, "add_layer_norm", [&](auto at, auto yt) {
    using Ta = decltype(at);
    using Ty = decltype(yt);
    const int grid = static_cast<int>((rows + kWarps - 1) / kWarps);
    launched = with_lane_vectors<V>(C, [&](auto k) {
      layer_norm_fwd_packed_kernel<float, Ty, V, decltype(k)::value, Ta>
          <<<grid, kThreads, 0, stream>>>(static_cast<Ty*>(y), mean, rstd, x, w, b, rows, static_cast<int>(C),
                                          static_cast<float>(eps), static_cast<const Ta*>(add), sum);
    });
  });
  VT_CUDA_CHECK(cudaGetLastError());
  return launched;
}

int64_t layer_norm_backward_scratch(int64_t rows, int64_t C) { return int64_t(backward_blocks(rows)) * 2 * C; }

void layer_norm_backward(DType x_dtype, DType dy_dtype, void* dx, const void* dres, float* dw, float* db,
                         const void* dy, const void* x, const float* mean, const float* rstd, const float* w,
                         int64_t rows, int64_t C, float* scratch, cudaStream_t stream) {
  const bool want_wb = dw || db;
  if (C == 0 || (!dx && !want_wb)) return;
  if (rows == 0) {  // Σ over no rows
    if (dw) VT_CUDA_CHECK(cudaMemsetAsync(dw, 0, C * sizeof(float), stream));
    if (db) VT_CUDA_CHECK(cudaMemsetAsync(db, 0, C * sizeof(float), stream));
    return;
  }
  const int grid = backward_blocks(rows);
  int used_blocks = grid;  // rows of partials the finalize sums
  float* partial = want_wb ? scratch : nullptr;
  device::dispatch_f32_bf16_pair(x_dtype, dy_dtype, "layer_norm_backward", [&](auto xt, auto dyt) {
    using Tx = decltype(xt);
    using Tdy = decltype(dyt);
    constexpr int V = packed_width<Tx, Tdy>();
    Tx* dxp = static_cast<Tx*>(dx);
    const Tx* resp = static_cast<const Tx*>(dres);
    const Tx* xp = static_cast<const Tx*>(x);
    const Tdy* dyp = static_cast<const Tdy*>(dy);
    const bool aligned =
        vec_aligned(dxp, V) && vec_aligned(resp, V) && vec_aligned(xp, V) && vec_aligned(dyp, V) && vec_aligned(w, V);
    const bool packed = aligned && with_lane_vectors<V>(C, [&](auto k) {
                          auto kernel = layer_norm_bwd_packed_kernel<Tx, Tdy, V, decltype(k)::value>;
                          // Blocks loop over tiles: launch only those that are resident at once, so none waits
                          // for a second wave (the register arrays bound the blocks per SM).
                          const int blocks = std::min(grid, resident_blocks(reinterpret_cast<const void*>(kernel)));
                          kernel<<<blocks, kThreads, 0, stream>>>(dxp, resp, partial, dyp, xp, mean, rstd, w, rows,
                                                                  static_cast<int>(C));
                          used_blocks = blocks;
                        });
    if (!packed) {
      const bool shared_acc = want_wb && C <= kSharedAccMax;
      const size_t smem = shared_acc ? 2 * C * sizeof(float) : 0;
      layer_norm_bwd_kernel<Tx, Tdy>
          <<<grid, kThreads, smem, stream>>>(dxp, resp, partial, dyp, xp, mean, rstd, w, rows, C, shared_acc);
    }
  });
  VT_CUDA_CHECK(cudaGetLastError());
  if (want_wb) {
    const dim3 block(kFinCols, kFinGroups);
    const int fin_grid = static_cast<int>((2 * C + kFinCols - 1) / kFinCols);
    layer_norm_wb_finalize_kernel<<<fin_grid, block, 0, stream>>>(dw, db, scratch, used_blocks, C);
    VT_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace vt::kernels::cuda
