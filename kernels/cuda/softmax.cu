// Softmax / log-softmax forward and backward on CUDA, f32 math for f32 or bf16 storage.
// Last dim (inner = 1): a group of G threads per row (a warp for R <= 1024, a whole block above), one online pass
// for (max, Σ exp) and one pass that writes. Other dims: one thread per (outer, inner) column walking R, so
// neighbouring threads read neighbouring addresses.
#include <cuda_bf16.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/device/row_reductions.cuh"
#include "kernels/cuda/softmax.h"

namespace vt::kernels::cuda {

namespace {

// ---- kernels ----

using device::add_value;
using device::combine;
using device::from_acc;
using device::MaxSum;
using device::to_acc;
using device::warp_maxsum;
using device::warp_sum;

// Reductions over a group of G threads: a warp (G = 32) or the whole block (G = blockDim.x). Every thread of the
// group gets the result.
template <int G>
__device__ MaxSum group_maxsum(MaxSum v) {
  v = warp_maxsum(v);
  if constexpr (G > 32) {
    __shared__ float sm[G / 32], ss[G / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) sm[warp] = v.m, ss[warp] = v.s;
    __syncthreads();
    v = lane < G / 32 ? MaxSum{sm[lane], ss[lane]} : MaxSum{-INFINITY, 0.f};
    v = warp_maxsum(v);
  }
  return v;
}

template <int G>
__device__ float group_sum(float v) {
  v = warp_sum(v);
  if constexpr (G > 32) {
    __shared__ float sh[G / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = warp_sum(lane < G / 32 ? sh[lane] : 0.f);
  }
  return v;
}

template <typename T, int G>
__global__ void softmax_rows_fwd_kernel(T* y, const T* x, int64_t rows, int64_t R, bool log) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
  if (row >= rows) return;  // uniform over each group: G = 32 is one warp, G = blockDim.x the whole block
  const int t = threadIdx.x % G;
  const T* xr = x + row * R;
  T* yr = y + row * R;
  MaxSum a{-INFINITY, 0.f};
  for (int64_t i = t; i < R; i += G) a = add_value(a, to_acc(xr[i]));
  a = group_maxsum<G>(a);
  if (log) {
    const float lse = a.m + logf(a.s);
    for (int64_t i = t; i < R; i += G) yr[i] = from_acc<T>(to_acc(xr[i]) - lse);
  } else {
    const float inv = 1.f / a.s;
    for (int64_t i = t; i < R; i += G) yr[i] = from_acc<T>(expf(to_acc(xr[i]) - a.m) * inv);
  }
}

template <typename T, int G>
__global__ void softmax_rows_bwd_kernel(T* dx, const T* dy, const T* y, int64_t rows, int64_t R, bool log) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
  if (row >= rows) return;
  const int t = threadIdx.x % G;
  const T* dyr = dy + row * R;
  const T* yr = y + row * R;
  T* dxr = dx + row * R;
  float s = 0.f;
  for (int64_t i = t; i < R; i += G) s += log ? to_acc(dyr[i]) : to_acc(dyr[i]) * to_acc(yr[i]);
  s = group_sum<G>(s);
  for (int64_t i = t; i < R; i += G) {
    const float g = to_acc(dyr[i]), v = to_acc(yr[i]);
    dxr[i] = from_acc<T>(log ? g - expf(v) * s : v * (g - s));
  }
}

// One thread per (o, j) column of (outer, R, inner).
template <typename T>
__global__ void softmax_strided_fwd_kernel(T* y, const T* x, int64_t outer, int64_t R, int64_t inner, bool log) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= outer * inner) return;
  const int64_t base = (idx / inner) * R * inner + idx % inner;
  MaxSum a{-INFINITY, 0.f};
  for (int64_t r = 0; r < R; ++r) a = add_value(a, to_acc(x[base + r * inner]));
  const float lse = a.m + logf(a.s), inv = 1.f / a.s;
  for (int64_t r = 0; r < R; ++r) {
    const float v = to_acc(x[base + r * inner]);
    y[base + r * inner] = from_acc<T>(log ? v - lse : expf(v - a.m) * inv);
  }
}

template <typename T>
__global__ void softmax_strided_bwd_kernel(T* dx, const T* dy, const T* y, int64_t outer, int64_t R, int64_t inner,
                                           bool log) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= outer * inner) return;
  const int64_t base = (idx / inner) * R * inner + idx % inner;
  float s = 0.f;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t k = base + r * inner;
    s += log ? to_acc(dy[k]) : to_acc(dy[k]) * to_acc(y[k]);
  }
  for (int64_t r = 0; r < R; ++r) {
    const int64_t k = base + r * inner;
    const float g = to_acc(dy[k]), v = to_acc(y[k]);
    dx[k] = from_acc<T>(log ? g - expf(v) * s : v * (g - s));
  }
}

// ---- launchers ----

constexpr int64_t kWarpRowMax = 1024;  // up to here a warp per row (<= 32 values per thread), a block above
constexpr int kWarpRowsPerBlock = 4;
constexpr int kBlockRowThreads = 512;

int blocks(int64_t n, int64_t per_block) { return static_cast<int>((n + per_block - 1) / per_block); }

}  // namespace

void softmax_forward(DType dtype, void* y, const void* x, int64_t outer, int64_t R, int64_t inner, bool log,
                     cudaStream_t stream) {
  if (outer * R * inner == 0) return;
  device::dispatch_f32_bf16(dtype, log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = decltype(tag);
    auto* yp = static_cast<T*>(y);
    const auto* xp = static_cast<const T*>(x);
    if (inner != 1) {
      softmax_strided_fwd_kernel<T><<<blocks(outer * inner, 256), 256, 0, stream>>>(yp, xp, outer, R, inner, log);
    } else if (R <= kWarpRowMax) {
      softmax_rows_fwd_kernel<T, 32>
          <<<blocks(outer, kWarpRowsPerBlock), 32 * kWarpRowsPerBlock, 0, stream>>>(yp, xp, outer, R, log);
    } else {
      softmax_rows_fwd_kernel<T, kBlockRowThreads>
          <<<static_cast<int>(outer), kBlockRowThreads, 0, stream>>>(yp, xp, outer, R, log);
    }
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void softmax_backward(DType dtype, void* dx, const void* dy, const void* y, int64_t outer, int64_t R, int64_t inner,
                      bool log, cudaStream_t stream) {
  if (outer * R * inner == 0) return;
  device::dispatch_f32_bf16(dtype, log ? "log_softmax_backward" : "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    auto* dxp = static_cast<T*>(dx);
    const auto* dyp = static_cast<const T*>(dy);
    const auto* yp = static_cast<const T*>(y);
    if (inner != 1) {
      softmax_strided_bwd_kernel<T><<<blocks(outer * inner, 256), 256, 0, stream>>>(dxp, dyp, yp, outer, R, inner, log);
    } else if (R <= kWarpRowMax) {
      softmax_rows_bwd_kernel<T, 32>
          <<<blocks(outer, kWarpRowsPerBlock), 32 * kWarpRowsPerBlock, 0, stream>>>(dxp, dyp, yp, outer, R, log);
    } else {
      softmax_rows_bwd_kernel<T, kBlockRowThreads>
          <<<static_cast<int>(outer), kBlockRowThreads, 0, stream>>>(dxp, dyp, yp, outer, R, log);
    }
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
