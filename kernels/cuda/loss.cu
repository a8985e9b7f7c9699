// Fused softmax + cross-entropy on CUDA. Forward: a group of G threads per row (a warp for C <= 1024, a block
// above) does one online (max, Σ exp) pass, plus what the loss needs (Σ x and x[t] for hard labels; a second pass
// over Σ t·(x − lse) for soft targets, which keeps the f32 sum free of cancellation). A one-block kernel then
// averages the row losses in a fixed order. Backward: hard labels are element-wise (exp(x − lse) per element);
// soft targets need Σ_c target per row, so they use a group per row again.
#include <algorithm>
#include <type_traits>

#include <cuda_bf16.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/device/row_reductions.cuh"
#include "kernels/cuda/loss.h"

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

// Reductions over a group of G threads (a warp, or the whole block when G = blockDim.x); all threads get the
// result. `slot` separates the shared buffers of successive calls in one kernel.
template <int G, int slot = 0>
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

template <typename T, int G>
__global__ void ce_fwd_kernel(float* row_loss, float* lse, const T* x, const int64_t* target, int64_t B, int64_t C,
                              float s) {
  const int64_t b = int64_t(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
  if (b >= B) return;  // uniform over the group
  const int t = threadIdx.x % G;
  const T* xr = x + b * C;
  MaxSum a{-INFINITY, 0.f};
  float sum_x = 0.f;
  for (int64_t c = t; c < C; c += G) {
    const float v = to_acc(xr[c]);
    a = add_value(a, v);
    sum_x += v;
  }
  a = group_maxsum<G>(a);
  if (s != 0.f) sum_x = group_sum<G, 1>(sum_x);
  if (t != 0) return;
  const float l = a.m + logf(a.s);
  lse[b] = l;
  const int64_t k = target[b];
  float loss = (k >= 0 && k < C) ? (1.f - s) * (l - to_acc(xr[k])) : NAN;
  if (s != 0.f) loss += s * (l - sum_x / static_cast<float>(C));
  row_loss[b] = loss;
}

template <typename T, typename Tt, int G>
__global__ void soft_ce_fwd_kernel(float* row_loss, float* lse, const T* x, const Tt* target, int64_t B, int64_t C) {
  const int64_t b = int64_t(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
  if (b >= B) return;
  const int t = threadIdx.x % G;
  const T* xr = x + b * C;
  const Tt* tr = target + b * C;
  MaxSum a{-INFINITY, 0.f};
  for (int64_t c = t; c < C; c += G) a = add_value(a, to_acc(xr[c]));
  a = group_maxsum<G>(a);
  const float l = a.m + logf(a.s);
  float acc = 0.f;
  for (int64_t c = t; c < C; c += G) acc += to_acc(tr[c]) * (to_acc(xr[c]) - l);
  acc = group_sum<G>(acc);
  if (t == 0) lse[b] = l, row_loss[b] = -acc;
}

// *loss = Σ row_loss / B with one block: each thread sums a fixed stride, then a fixed tree (deterministic).
constexpr int kMeanThreads = 1024;
__global__ void mean_kernel(float* loss, const float* row_loss, int64_t B) {
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < B; i += kMeanThreads) s += row_loss[i];
  s = group_sum<kMeanThreads>(s);
  if (threadIdx.x == 0) *loss = s / static_cast<float>(B);
}

template <typename T>
__global__ void ce_bwd_kernel(T* dx, const T* x, const float* lse, const int64_t* target, const float* dloss, int64_t B,
                              int64_t C, float s) {
  const float k = *dloss / static_cast<float>(B);
  const float off = s / static_cast<float>(C) * k, on = (1.f - s) * k;
  const int64_t n = B * C;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / C, c = i - b * C;
    float d = expf(to_acc(x[i]) - lse[b]) * k - off;
    if (c == target[b]) d -= on;
    dx[i] = from_acc<T>(d);
  }
}

template <typename T, typename Tt, int G>
__global__ void soft_ce_bwd_kernel(T* dx, Tt* dt, const T* x, const Tt* target, const float* lse, const float* dloss,
                                   int64_t B, int64_t C) {
  const int64_t b = int64_t(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
  if (b >= B) return;
  const int t = threadIdx.x % G;
  const float k = *dloss / static_cast<float>(B), l = lse[b];
  const T* xr = x + b * C;
  const Tt* tr = target + b * C;
  if (dx) {
    float st = 0.f;  // Σ target: 1 for proper distributions, kept general so the gradient is exact
    for (int64_t c = t; c < C; c += G) st += to_acc(tr[c]);
    st = group_sum<G>(st);
    for (int64_t c = t; c < C; c += G) dx[b * C + c] = from_acc<T>((expf(to_acc(xr[c]) - l) * st - to_acc(tr[c])) * k);
  }
  if (dt)
    for (int64_t c = t; c < C; c += G) dt[b * C + c] = from_acc<Tt>(-(to_acc(xr[c]) - l) * k);
}

// ---- launchers ----

constexpr int64_t kWarpRowMax = 1024;
constexpr int kWarpRowsPerBlock = 4;
constexpr int kBlockRowThreads = 512;

// Launches kernel<G> with a warp per row for narrow rows, a block per row for wide ones.
template <typename Launch>
void per_row(int64_t B, int64_t C, Launch&& launch) {
  if (C <= kWarpRowMax)
    launch(std::integral_constant<int, 32>{}, static_cast<int>((B + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock),
           32 * kWarpRowsPerBlock);
  else launch(std::integral_constant<int, kBlockRowThreads>{}, static_cast<int>(B), kBlockRowThreads);
}

void launch_mean(float* loss, const float* row_loss, int64_t B, cudaStream_t stream) {
  mean_kernel<<<1, kMeanThreads, 0, stream>>>(loss, row_loss, B);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void cross_entropy_forward(DType logits_dtype, float* loss, float* lse, float* row_loss, const void* logits,
                           const int64_t* target, int64_t B, int64_t C, double smoothing, cudaStream_t stream) {
  VT_CHECK(B > 0 && C > 0, "[cross_entropy] needs B, C > 0");
  device::dispatch_f32_bf16(logits_dtype, "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    per_row(B, C, [&](auto g, int grid, int block) {
      ce_fwd_kernel<T, decltype(g)::value><<<grid, block, 0, stream>>>(row_loss, lse, static_cast<const T*>(logits),
                                                                       target, B, C, static_cast<float>(smoothing));
    });
  });
  VT_CUDA_CHECK(cudaGetLastError());
  launch_mean(loss, row_loss, B, stream);
}

void cross_entropy_backward(DType logits_dtype, void* dlogits, const void* logits, const float* lse,
                            const int64_t* target, const float* dloss, int64_t B, int64_t C, double smoothing,
                            cudaStream_t stream) {
  const int64_t n = B * C;
  if (n == 0) return;
  device::dispatch_f32_bf16(logits_dtype, "cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    const int grid = static_cast<int>(std::min<int64_t>((n + 255) / 256, 132 * 16));
    ce_bwd_kernel<T><<<grid, 256, 0, stream>>>(static_cast<T*>(dlogits), static_cast<const T*>(logits), lse, target,
                                               dloss, B, C, static_cast<float>(smoothing));
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void soft_target_cross_entropy_forward(DType logits_dtype, DType target_dtype, float* loss, float* lse, float* row_loss,
                                       const void* logits, const void* target, int64_t B, int64_t C,
                                       cudaStream_t stream) {
  VT_CHECK(B > 0 && C > 0, "[soft_target_cross_entropy] needs B, C > 0");
  device::dispatch_f32_bf16_pair(logits_dtype, target_dtype, "soft_target_cross_entropy", [&](auto tx, auto tt) {
    using T = decltype(tx);
    using Tt = decltype(tt);
    per_row(B, C, [&](auto g, int grid, int block) {
      soft_ce_fwd_kernel<T, Tt, decltype(g)::value><<<grid, block, 0, stream>>>(
          row_loss, lse, static_cast<const T*>(logits), static_cast<const Tt*>(target), B, C);
    });
  });
  VT_CUDA_CHECK(cudaGetLastError());
  launch_mean(loss, row_loss, B, stream);
}

void soft_target_cross_entropy_backward(DType logits_dtype, DType target_dtype, void* dlogits, void* dtarget,
                                        const void* logits, const void* target, const float* lse, const float* dloss,
                                        int64_t B, int64_t C, cudaStream_t stream) {
  if (B * C == 0 || (!dlogits && !dtarget)) return;
  device::dispatch_f32_bf16_pair(
      logits_dtype, target_dtype, "soft_target_cross_entropy_backward", [&](auto tx, auto tt) {
        using T = decltype(tx);
        using Tt = decltype(tt);
        per_row(B, C, [&](auto g, int grid, int block) {
          soft_ce_bwd_kernel<T, Tt, decltype(g)::value><<<grid, block, 0, stream>>>(
              static_cast<T*>(dlogits), static_cast<Tt*>(dtarget), static_cast<const T*>(logits),
              static_cast<const Tt*>(target), lse, dloss, B, C);
        });
      });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
