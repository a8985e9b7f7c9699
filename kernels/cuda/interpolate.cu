// Bilinear resize on CUDA. Forward: one thread per output element, the four taps from bilinear_taps<float>.
// Backward as a gather: one thread per input element finds the output rows and columns that may read it (a
// window around (i ± 1)·out/in, then checked exactly with the forward's taps) and sums their gradients weighted as
// in the forward; the sum's order is fixed, so the result is deterministic and needs no atomics.
#include <cuda_bf16.h>

#include "kernels/bilinear_taps.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/interpolate.h"

namespace vt::kernels::cuda {

namespace {

using device::from_acc;
using device::to_acc;

constexpr int kThreads = 256;

// I: the index type of the element loops (int32 when the tensors allow: 64-bit division is slow on the GPU).
template <typename T, typename I>
__global__ void bilinear_fwd_kernel(T* out, const T* x, BilinearShape s) {
  const I n = static_cast<I>(s.planes * s.out_h * s.out_w), out_w = static_cast<I>(s.out_w);
  const I out_h = static_cast<I>(s.out_h);
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    const I ox = i % out_w, t = i / out_w, oy = t % out_h, p = t / out_h;
    int64_t y0, y1, x0, x1;
    float wy1, wx1;
    bilinear_taps<float>(oy, s.in_h, s.out_h, y0, y1, wy1);
    bilinear_taps<float>(ox, s.in_w, s.out_w, x0, x1, wx1);
    const T* xp = x + p * s.in_h * s.in_w;
    const float wy0 = 1.f - wy1, wx0 = 1.f - wx1;
    const float top = wx0 * to_acc(xp[y0 * s.in_w + x0]) + wx1 * to_acc(xp[y0 * s.in_w + x1]);
    const float bottom = wx0 * to_acc(xp[y1 * s.in_w + x0]) + wx1 * to_acc(xp[y1 * s.in_w + x1]);
    out[i] = from_acc<T>(wy0 * top + wy1 * bottom);
  }
}

// The weight with which output index o reads input index i along one axis (0 when it does not read it).
__device__ __forceinline__ float tap_weight(int64_t o, int64_t i, int64_t in, int64_t out) {
  int64_t i0, i1;
  float w1;
  bilinear_taps<float>(o, in, out, i0, i1, w1);
  return (i0 == i ? 1.f - w1 : 0.f) + (i1 == i ? w1 : 0.f);
}

// Output indices [lo, hi] that may read input i: those whose source coordinate lies in [i − 1, i + 1), widened
// by one on each side against rounding (membership is then decided by tap_weight).
__device__ __forceinline__ void reader_range(int64_t i, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  const float r = static_cast<float>(out) / static_cast<float>(in);
  lo = i <= 1 ? 0 : static_cast<int64_t>(floorf((static_cast<float>(i) - 0.5f) * r - 0.5f)) - 1;
  hi = static_cast<int64_t>(ceilf((static_cast<float>(i) + 1.5f) * r - 0.5f)) + 1;
  if (lo < 0) lo = 0;
  if (hi > out - 1) hi = out - 1;
}

template <typename T, typename I>
__global__ void bilinear_bwd_kernel(T* dx, const T* dout, BilinearShape s) {
  const I n = static_cast<I>(s.planes * s.in_h * s.in_w), in_w = static_cast<I>(s.in_w);
  const I in_h = static_cast<I>(s.in_h);
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    const I ix = i % in_w, t = i / in_w, iy = t % in_h, p = t / in_h;
    int64_t ylo, yhi, xlo, xhi;
    reader_range(iy, s.in_h, s.out_h, ylo, yhi);
    reader_range(ix, s.in_w, s.out_w, xlo, xhi);
    const T* gp = dout + p * s.out_h * s.out_w;
    float acc = 0.f;
    for (int64_t oy = ylo; oy <= yhi; ++oy) {
      const float wy = tap_weight(oy, iy, s.in_h, s.out_h);
      if (wy == 0.f) continue;
      float row = 0.f;
      for (int64_t ox = xlo; ox <= xhi; ++ox) {
        const float wx = tap_weight(ox, ix, s.in_w, s.out_w);
        if (wx != 0.f) row += wx * to_acc(gp[oy * s.out_w + ox]);
      }
      acc += wy * row;
    }
    dx[i] = from_acc<T>(acc);
  }
}

// Whether every element index (and a grid-stride step past the end) fits in int32.
bool fits_int32(const BilinearShape& s) {
  const int64_t limit = int64_t(1) << 30;
  return s.planes * s.in_h * s.in_w < limit && s.planes * s.out_h * s.out_w < limit;
}

}  // namespace

void bilinear_forward(DType dtype, void* out, const void* x, const BilinearShape& s, cudaStream_t stream) {
  const int64_t n = s.planes * s.out_h * s.out_w;
  if (n == 0) return;
  device::dispatch_f32_bf16(dtype, "interpolate_bilinear", [&](auto tag) {
    using T = decltype(tag);
    auto* o = static_cast<T*>(out);
    auto* xi = static_cast<const T*>(x);
    if (fits_int32(s))
      bilinear_fwd_kernel<T, int32_t><<<device::grid_for(n, kThreads), kThreads, 0, stream>>>(o, xi, s);
    else bilinear_fwd_kernel<T, int64_t><<<device::grid_for(n, kThreads), kThreads, 0, stream>>>(o, xi, s);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void bilinear_backward(DType dtype, void* dx, const void* dout, const BilinearShape& s, cudaStream_t stream) {
  const int64_t n = s.planes * s.in_h * s.in_w;
  if (n == 0) return;
  device::dispatch_f32_bf16(dtype, "interpolate_bilinear_backward", [&](auto tag) {
    using T = decltype(tag);
    auto* d = static_cast<T*>(dx);
    auto* g = static_cast<const T*>(dout);
    if (fits_int32(s)) bilinear_bwd_kernel<T, int32_t><<<device::grid_for(n, kThreads), kThreads, 0, stream>>>(d, g, s);
    else bilinear_bwd_kernel<T, int64_t><<<device::grid_for(n, kThreads), kThreads, 0, stream>>>(d, g, s);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
