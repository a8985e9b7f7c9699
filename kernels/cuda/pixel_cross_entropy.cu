// Pixel cross-entropy on CUDA. Forward: one thread per pixel walks the K classes (stride P, so a warp reads 32
// neighbouring pixels of one class at a time: coalesced) with an online (max, Σ exp) in f32, writes the pixel's
// lse, and each block sums its losses and valid pixels in a fixed tree; a one-block kernel adds the block partials
// in a fixed order and divides on the device. Backward: one thread per pixel again, writing its K gradients.
#include <cuda_bf16.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/device/row_reductions.cuh"
#include "kernels/cuda/pixel_cross_entropy.h"

namespace vt::kernels::cuda {

namespace {

using device::add_value;
using device::from_acc;
using device::MaxSum;
using device::to_acc;
using device::warp_sum;

constexpr int kThreads = 256;  // pixels per forward block: one partial (loss, count) pair each
constexpr int kFinalThreads = 1024;

// Σ v over the block (blockDim.x = N, a multiple of 32); the result is valid in thread 0.
template <int N, int slot>
__device__ float block_sum(float v) {
  __shared__ float sh[N / 32];
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  return warp == 0 ? warp_sum(lane < N / 32 ? sh[lane] : 0.f) : 0.f;
}

template <typename T>
__global__ void pixel_ce_fwd_kernel(float* partial, float* lse, const T* x, const int64_t* target, PixelCeShape s) {
  const int64_t n = s.B * s.P;
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  float loss = 0.f, valid = 0.f;
  if (i < n) {
    const int64_t b = i / s.P, p = i - b * s.P;
    const int64_t t = target[i];
    if (t == s.ignore_index) {
      lse[i] = 0.f;
    } else {
      const T* xp = x + b * s.K * s.P + p;
      MaxSum a{-INFINITY, 0.f};
#pragma unroll 4
      for (int64_t k = 0; k < s.K; ++k) a = add_value(a, to_acc(xp[k * s.P]));
      const float l = a.m + logf(a.s);
      lse[i] = l;
      loss = (t >= 0 && t < s.K) ? l - to_acc(xp[t * s.P]) : NAN;
      valid = 1.f;
    }
  }
  loss = block_sum<kThreads, 0>(loss);
  valid = block_sum<kThreads, 1>(valid);
  if (threadIdx.x == 0) partial[2 * blockIdx.x] = loss, partial[2 * blockIdx.x + 1] = valid;
}

// Counts are sums of 0/1 in f32: exact below 2^24 pixels per call.
__global__ void pixel_ce_final_kernel(float* loss, float* inv_count, const float* partial, int64_t blocks) {
  float l = 0.f, c = 0.f;
  for (int64_t j = threadIdx.x; j < blocks; j += kFinalThreads) l += partial[2 * j], c += partial[2 * j + 1];
  l = block_sum<kFinalThreads, 0>(l);
  c = block_sum<kFinalThreads, 1>(c);
  if (threadIdx.x == 0) {
    *loss = c > 0.f ? l / c : 0.f;
    *inv_count = c > 0.f ? 1.f / c : 0.f;
  }
}

template <typename T>
__global__ void pixel_ce_bwd_kernel(T* dx, const T* x, const float* lse, const int64_t* target, const float* dloss,
                                    const float* inv_count, PixelCeShape s) {
  const int64_t n = s.B * s.P;
  const float k_scale = *dloss * *inv_count;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / s.P, p = i - b * s.P;
    const int64_t t = target[i];
    const int64_t base = b * s.K * s.P + p;
    if (t == s.ignore_index) {
      for (int64_t k = 0; k < s.K; ++k) dx[base + k * s.P] = from_acc<T>(0.f);
      continue;
    }
    const float l = lse[i];
#pragma unroll 4
    for (int64_t k = 0; k < s.K; ++k) {
      float d = expf(to_acc(x[base + k * s.P]) - l) * k_scale;
      if (k == t) d -= k_scale;
      dx[base + k * s.P] = from_acc<T>(d);
    }
  }
}

int64_t forward_blocks(const PixelCeShape& s) { return (s.B * s.P + kThreads - 1) / kThreads; }

}  // namespace

int64_t pixel_cross_entropy_scratch(const PixelCeShape& s) { return 2 * forward_blocks(s); }

void pixel_cross_entropy_forward(DType logits_dtype, float* loss, float* inv_count, float* lse, const void* logits,
                                 const int64_t* target, const PixelCeShape& s, float* scratch, cudaStream_t stream) {
  VT_CHECK(s.B * s.P > 0 && s.K > 0, "[pixel_cross_entropy] needs B, K, H·W > 0");
  VT_CHECK(s.B * s.P < (int64_t(1) << 24), "[pixel_cross_entropy] at most 2^24 pixels per call (f32 counts), got ",
           s.B * s.P);
  const int64_t blocks = forward_blocks(s);
  device::dispatch_f32_bf16(logits_dtype, "pixel_cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    pixel_ce_fwd_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        scratch, lse, static_cast<const T*>(logits), target, s);
  });
  VT_CUDA_CHECK(cudaGetLastError());
  pixel_ce_final_kernel<<<1, kFinalThreads, 0, stream>>>(loss, inv_count, scratch, blocks);
  VT_CUDA_CHECK(cudaGetLastError());
}

void pixel_cross_entropy_backward(DType logits_dtype, void* dlogits, const void* logits, const float* lse,
                                  const int64_t* target, const float* dloss, const float* inv_count,
                                  const PixelCeShape& s, cudaStream_t stream) {
  const int64_t n = s.B * s.P;
  if (n == 0 || s.K == 0) return;
  device::dispatch_f32_bf16(logits_dtype, "pixel_cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    pixel_ce_bwd_kernel<T><<<device::grid_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<T*>(dlogits), static_cast<const T*>(logits), lse, target, dloss, inv_count, s);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
