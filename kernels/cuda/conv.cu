// Depth-wise K×K conv (K = 3 or 5) and adaptive average pooling on the GPU (see conv.h). Element-wise parts use one
// thread per output element with a grid-stride loop; the weight/bias gradients use one block per channel that walks
// the channel's B·H·W positions and reduces its K² + 1 partial sums (taps + bias) through warp shuffles.
#include "kernels/cuda/conv.h"

#include <algorithm>
#include <type_traits>

#include <cuda_bf16.h>

#include "core/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"

namespace vt::kernels::cuda {
namespace {

constexpr int kBlock = 256;

int grid_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + kBlock - 1) / kBlock, 1 << 20)); }

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16(v); }

// ---- depth-wise K×K ----
// I: the index type, 32-bit whenever every offset fits (the 64-bit divisions cost more than the arithmetic).
template <typename T, typename I, int K>
__global__ void dw_forward_kernel(T* out, const T* x, const T* w, const T* bias, I C, I H, I W, I total) {
  constexpr int r = K / 2;
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    const I xx = i % W, y = (i / W) % H, plane = i / (H * W), c = plane % C;
    const I base = plane * H * W;
    float acc = bias ? load(bias, c) : 0.0f;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      const I yy = y + ky - r;
      if (yy < 0 || yy >= H) continue;
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        const I xi = xx + kx - r;
        if (xi < 0 || xi >= W) continue;
        acc += load(w, c * K * K + ky * K + kx) * load(x, base + yy * W + xi);
      }
    }
    store(out, i, acc);
  }
}

// dx[y, x] = Σ_taps w[ky, kx] · g[y − ky + K/2, x − kx + K/2].
template <typename T, typename I, int K>
__global__ void dw_dx_kernel(T* dx, const T* g, const T* w, I C, I H, I W, I total) {
  constexpr int r = K / 2;
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    const I xx = i % W, y = (i / W) % H, plane = i / (H * W), c = plane % C;
    const I base = plane * H * W;
    float acc = 0.0f;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      const I yy = y - ky + r;
      if (yy < 0 || yy >= H) continue;
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        const I xo = xx - kx + r;
        if (xo < 0 || xo >= W) continue;
        acc += load(w, c * K * K + ky * K + kx) * load(g, base + yy * W + xo);
      }
    }
    store(dx, i, acc);
  }
}

// One block of kWeightBlock threads per channel c (few channels: the block is wide):
// dweight[c, tap] = Σ_{b, y, x} g · x[y + ky − K/2, x + kx − K/2], dbias[c] = Σ g.
constexpr int kWeightBlock = 1024;

template <typename T, typename I, int K>
__global__ void __launch_bounds__(kWeightBlock)
    dw_dweight_kernel(T* dw, T* db, const T* g, const T* x, I B, I C, I H, I W) {
  constexpr int r = K / 2, kTaps = K * K, kSlots = kTaps + 1;  // the taps, then the bias
  const I c = blockIdx.x, HW = H * W, n = B * HW;
  float part[kSlots] = {};
  for (I j = threadIdx.x; j < n; j += blockDim.x) {
    const I b = j / HW, pos = j % HW, y = pos / W, xx = pos % W;
    const I base = (b * C + c) * HW;
    const float gv = load(g, base + pos);
    part[kTaps] += gv;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      const I yy = y + ky - r;
      if (yy < 0 || yy >= H) continue;
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        const I xi = xx + kx - r;
        if (xi < 0 || xi >= W) continue;
        part[ky * K + kx] += gv * load(x, base + yy * W + xi);
      }
    }
  }
  __shared__ float warp_sums[kWeightBlock / 32][kSlots];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int t = 0; t < kSlots; ++t) {
    float v = part[t];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) warp_sums[warp][t] = v;
  }
  __syncthreads();
  if (threadIdx.x < kSlots) {
    float s = 0.0f;
    for (int k = 0; k < kWeightBlock / 32; ++k) s += warp_sums[k][threadIdx.x];
    if (threadIdx.x < kTaps && dw) store(dw, c * kTaps + threadIdx.x, s);
    if (threadIdx.x == kTaps && db) store(db, c, s);
  }
}

/// Calls f(std::integral_constant<int, K>{}) for the kernel sides these kernels are built for.
template <typename F>
void dispatch_side(int64_t K, F&& f) {
  VT_CHECK(K == 3 || K == 5, "[depthwise_conv2d] the CUDA kernels take a 3×3 or 5×5 kernel, got ", K, "×", K);
  if (K == 3) f(std::integral_constant<int, 3>{});
  else f(std::integral_constant<int, 5>{});
}

// ---- adaptive average pooling ----
__device__ __forceinline__ int64_t bin_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
__device__ __forceinline__ int64_t bin_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

template <typename T>
__global__ void pool_forward_kernel(T* out, const T* x, int64_t H, int64_t W, int64_t oh, int64_t ow, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % ow, r = (i / ow) % oh, n = i / (oh * ow);
    const int64_t y0 = bin_start(r, H, oh), y1 = bin_end(r, H, oh), x0 = bin_start(j, W, ow), x1 = bin_end(j, W, ow);
    const T* plane = x + n * H * W;
    float acc = 0.0f;
    for (int64_t y = y0; y < y1; ++y)
      for (int64_t k = x0; k < x1; ++k) acc += load(plane, y * W + k);
    store(out, i, acc / static_cast<float>((y1 - y0) * (x1 - x0)));
  }
}

// Bins of `out` over `in` that contain position p: i in [lo, hi] with start(i) ≤ p < end(i) (checked by callers).
__device__ __forceinline__ void candidate_bins(int64_t p, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = max(int64_t(0), (p * out) / in - 1);
  hi = min(out - 1, ((p + 1) * out) / in);
}

template <typename T>
__global__ void pool_backward_kernel(T* dx, const T* g, int64_t H, int64_t W, int64_t oh, int64_t ow, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t xx = i % W, y = (i / W) % H, n = i / (H * W);
    int64_t r0, r1, c0, c1;
    candidate_bins(y, H, oh, r0, r1);
    candidate_bins(xx, W, ow, c0, c1);
    const T* gp = g + n * oh * ow;
    float acc = 0.0f;
    for (int64_t r = r0; r <= r1; ++r) {
      const int64_t y0 = bin_start(r, H, oh), y1 = bin_end(r, H, oh);
      if (y < y0 || y >= y1) continue;
      for (int64_t j = c0; j <= c1; ++j) {
        const int64_t x0 = bin_start(j, W, ow), x1 = bin_end(j, W, ow);
        if (xx < x0 || xx >= x1) continue;
        acc += load(gp, r * ow + j) / static_cast<float>((y1 - y0) * (x1 - x0));
      }
    }
    store(dx, i, acc);
  }
}

}  // namespace

void depthwise_forward(DType dtype, void* out, const void* x, const void* weight, const void* bias, int64_t B,
                       int64_t C, int64_t H, int64_t W, int64_t K, cudaStream_t stream) {
  const int64_t total = B * C * H * W;
  if (total == 0) return;
  device::dispatch_f32_bf16(dtype, "depthwise_conv2d", [&](auto t) {
    using T = decltype(t);
    dispatch_side(K, [&](auto side) {
      constexpr int kSide = decltype(side)::value;
      auto launch = [&](auto index) {
        using I = decltype(index);
        dw_forward_kernel<T, I, kSide><<<grid_for(total), kBlock, 0, stream>>>(
            static_cast<T*>(out), static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias),
            I(C), I(H), I(W), I(total));
      };
      total < (int64_t{1} << 31) ? launch(int32_t{}) : launch(int64_t{});
    });
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void depthwise_backward(DType dtype, void* dx, void* dweight, void* dbias, const void* g, const void* x,
                        const void* weight, int64_t B, int64_t C, int64_t H, int64_t W, int64_t K,
                        cudaStream_t stream) {
  const int64_t total = B * C * H * W;
  device::dispatch_f32_bf16(dtype, "depthwise_conv2d", [&](auto t) {
    using T = decltype(t);
    dispatch_side(K, [&](auto side) {
      constexpr int kSide = decltype(side)::value;
      auto launch = [&](auto index) {
        using I = decltype(index);
        if (dx && total > 0)
          dw_dx_kernel<T, I, kSide><<<grid_for(total), kBlock, 0, stream>>>(
              static_cast<T*>(dx), static_cast<const T*>(g), static_cast<const T*>(weight), I(C), I(H), I(W), I(total));
        if ((dweight || dbias) && C > 0)
          dw_dweight_kernel<T, I, kSide><<<static_cast<unsigned>(C), kWeightBlock, 0, stream>>>(
              static_cast<T*>(dweight), static_cast<T*>(dbias), static_cast<const T*>(g), static_cast<const T*>(x),
              I(B), I(C), I(H), I(W));
      };
      total < (int64_t{1} << 31) ? launch(int32_t{}) : launch(int64_t{});
    });
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void adaptive_avg_pool2d_forward(DType dtype, void* out, const void* x, int64_t N, int64_t H, int64_t W, int64_t oh,
                                 int64_t ow, cudaStream_t stream) {
  const int64_t total = N * oh * ow;
  if (total == 0) return;
  device::dispatch_f32_bf16(dtype, "adaptive_avg_pool", [&](auto t) {
    using T = decltype(t);
    pool_forward_kernel<T>
        <<<grid_for(total), kBlock, 0, stream>>>(static_cast<T*>(out), static_cast<const T*>(x), H, W, oh, ow, total);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void adaptive_avg_pool2d_backward(DType dtype, void* dx, const void* g, int64_t N, int64_t H, int64_t W, int64_t oh,
                                  int64_t ow, cudaStream_t stream) {
  const int64_t total = N * H * W;
  if (total == 0) return;
  device::dispatch_f32_bf16(dtype, "adaptive_avg_pool", [&](auto t) {
    using T = decltype(t);
    pool_backward_kernel<T>
        <<<grid_for(total), kBlock, 0, stream>>>(static_cast<T*>(dx), static_cast<const T*>(g), H, W, oh, ow, total);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
