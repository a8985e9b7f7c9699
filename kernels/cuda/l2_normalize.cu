// L2 normalization on CUDA: a warp per row (kWarps rows per block), Σ x² and y·g as f32 warp sums, the row
// re-read from L1/L2 for the output. Rows of any width work (lanes stride the row).
#include <cuda_bf16.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/device/row_reductions.cuh"
#include "kernels/cuda/l2_normalize.h"

namespace vt::kernels::cuda {

namespace {

using device::from_acc;
using device::to_acc;
using device::warp_sum;

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;

template <typename T>
__global__ void l2_normalize_fwd_kernel(T* y, float* norm, const T* x, int64_t rows, int64_t C, float eps) {
  const int64_t row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const T* xr = x + row * C;
  float ss = 0.f;
  for (int64_t c = lane; c < C; c += 32) {
    const float v = to_acc(xr[c]);
    ss += v * v;
  }
  const float n = sqrtf(warp_sum(ss));
  const float inv = 1.f / fmaxf(n, eps);
  if (lane == 0) norm[row] = n;
  for (int64_t c = lane; c < C; c += 32) y[row * C + c] = from_acc<T>(to_acc(xr[c]) * inv);
}

template <typename T>
__global__ void l2_normalize_bwd_kernel(T* dx, const T* g, const T* x, const float* norm, int64_t rows, int64_t C,
                                        float eps) {
  const int64_t row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const T* xr = x + row * C;
  const T* gr = g + row * C;
  const float n = norm[row];
  const float inv = 1.f / fmaxf(n, eps);
  float yg = 0.f;
  if (n >= eps) {  // row-uniform branch: the clamp passes no gradient to the norm
    for (int64_t c = lane; c < C; c += 32) yg += to_acc(xr[c]) * to_acc(gr[c]);
    yg = warp_sum(yg) * inv;
  }
  for (int64_t c = lane; c < C; c += 32)
    dx[row * C + c] = from_acc<T>((to_acc(gr[c]) - to_acc(xr[c]) * inv * yg) * inv);
}

unsigned blocks_for(int64_t rows) { return static_cast<unsigned>((rows + kWarps - 1) / kWarps); }

}  // namespace

void l2_normalize_forward(DType dtype, void* y, float* norm, const void* x, int64_t rows, int64_t C, double eps,
                          cudaStream_t stream) {
  if (rows == 0 || C == 0) return;
  device::dispatch_f32_bf16(dtype, "l2_normalize", [&](auto tag) {
    using T = decltype(tag);
    l2_normalize_fwd_kernel<T><<<blocks_for(rows), kThreads, 0, stream>>>(
        static_cast<T*>(y), norm, static_cast<const T*>(x), rows, C, static_cast<float>(eps));
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void l2_normalize_backward(DType dtype, void* dx, const void* g, const void* x, const float* norm, int64_t rows,
                           int64_t C, double eps, cudaStream_t stream) {
  if (rows == 0 || C == 0) return;
  device::dispatch_f32_bf16(dtype, "l2_normalize_backward", [&](auto tag) {
    using T = decltype(tag);
    l2_normalize_bwd_kernel<T><<<blocks_for(rows), kThreads, 0, stream>>>(static_cast<T*>(dx), static_cast<const T*>(g),
                                                                          static_cast<const T*>(x), norm, rows, C,
                                                                          static_cast<float>(eps));
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
