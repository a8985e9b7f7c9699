// Fused LayerNorm on CUDA. Forward: a warp per row, two-pass statistics in f32 (mean, then Σ(x − mean)², so a
// large mean costs no digits), the row re-read from L1/L2. Backward: a warp per row for dx; for dw/db each block
// takes tiles of kWarps rows and, after a tile's dx, each thread adds the tile's rows into the columns it owns
// (shared memory when 2·C floats fit, else the block's slice of global scratch). A second kernel sums the
// per-block partials per column. Every column has one owner and a fixed order: deterministic, no atomics.
#include <algorithm>

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

// ---- kernels ----

using device::from_acc;
using device::to_acc;
using device::warp_sum;

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

// dx for the row of each warp, then (when dw/db are wanted) the tile's rows added into this block's partials.
template <typename Tx, typename Tdy>
__global__ void layer_norm_bwd_kernel(Tx* dx, float* partial, const Tdy* dy, const Tx* x, const float* mean,
                                      const float* rstd, const float* w, int64_t rows, int64_t C, bool shared_acc) {
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
        dxr[c] = from_acc<Tx>(r * (g - a - (to_acc(xr[c]) - m) * r * bq));
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

// dw[c] = Σ_blocks partial[blk][c], db[c] = Σ_blocks partial[blk][C + c], blocks in order.
__global__ void layer_norm_wb_finalize_kernel(float* dw, float* db, const float* partial, int nblocks, int64_t C) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sw = 0.f, sb = 0.f;
  for (int k = 0; k < nblocks; ++k) {
    sw += partial[int64_t(k) * 2 * C + c];
    sb += partial[int64_t(k) * 2 * C + C + c];
  }
  if (dw) dw[c] = sw;
  if (db) db[c] = sb;
}

// ---- launchers ----

int backward_blocks(int64_t rows) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((rows + kWarps - 1) / kWarps, kMaxBackwardBlocks)));
}

}  // namespace

void layer_norm_forward(DType x_dtype, DType y_dtype, void* y, float* mean, float* rstd, const void* x,
                        const float* w, const float* b, int64_t rows, int64_t C, double eps, cudaStream_t stream) {
  if (rows == 0 || C == 0) return;
  device::dispatch_f32_bf16_pair(x_dtype, y_dtype, "layer_norm", [&](auto xt, auto yt) {
    using Tx = decltype(xt);
    using Ty = decltype(yt);
    const int grid = static_cast<int>((rows + kWarps - 1) / kWarps);
    layer_norm_fwd_kernel<Tx, Ty><<<grid, kThreads, 0, stream>>>(static_cast<Ty*>(y), mean, rstd,
                                                                 static_cast<const Tx*>(x), w, b, rows, C,
                                                                 static_cast<float>(eps));
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

int64_t layer_norm_backward_scratch(int64_t rows, int64_t C) { return int64_t(backward_blocks(rows)) * 2 * C; }

void layer_norm_backward(DType x_dtype, DType dy_dtype, void* dx, float* dw, float* db, const void* dy,
                         const void* x, const float* mean, const float* rstd, const float* w, int64_t rows,
                         int64_t C, float* scratch, cudaStream_t stream) {
  const bool want_wb = dw || db;
  if (C == 0 || (!dx && !want_wb)) return;
  if (rows == 0) {  // Σ over no rows
    if (dw) VT_CUDA_CHECK(cudaMemsetAsync(dw, 0, C * sizeof(float), stream));
    if (db) VT_CUDA_CHECK(cudaMemsetAsync(db, 0, C * sizeof(float), stream));
    return;
  }
  const int grid = backward_blocks(rows);
  const bool shared_acc = want_wb && C <= kSharedAccMax;
  const size_t smem = shared_acc ? 2 * C * sizeof(float) : 0;
  device::dispatch_f32_bf16_pair(x_dtype, dy_dtype, "layer_norm_backward", [&](auto xt, auto dyt) {
    using Tx = decltype(xt);
    using Tdy = decltype(dyt);
    layer_norm_bwd_kernel<Tx, Tdy><<<grid, kThreads, smem, stream>>>(
        static_cast<Tx*>(dx), want_wb ? scratch : nullptr, static_cast<const Tdy*>(dy), static_cast<const Tx*>(x),
        mean, rstd, w, rows, C, shared_acc);
  });
  VT_CUDA_CHECK(cudaGetLastError());
  if (want_wb) {
    layer_norm_wb_finalize_kernel<<<static_cast<int>((C + 255) / 256), 256, 0, stream>>>(dw, db, scratch, grid, C);
    VT_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace vt::kernels::cuda
