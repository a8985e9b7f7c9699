// The source taps of PyTorch's bilinear resize (align_corners=False): one rule for the CPU kernel
// (kernels/cpu/interpolate.cpp) and its CUDA twin (kernels/cuda/interpolate.cu), so both read the same pixels.
#pragma once
#include <cstdint>

#ifndef VT_HD  // as in core/rng.h: the taps below are shared with the CUDA kernels
#if defined(__CUDACC__)
#define VT_HD __host__ __device__ __forceinline__
#else
#define VT_HD inline
#endif
#endif

namespace vt::kernels {

/// PyTorch's source taps of output index `dst` along one axis: i0, i1 (= i0 + 1, or i0 at the last input) and
/// the weight of i1 (that of i0 is 1 − w1). The source coordinate is (dst + 0.5)·in/out − 0.5, clamped at 0.
/// A is the math type (float for f32, double for f64), as in PyTorch.
template <typename A>
VT_HD void bilinear_taps(int64_t dst, int64_t in, int64_t out, int64_t& i0, int64_t& i1, A& w1) {
  const A scale = static_cast<A>(in) / static_cast<A>(out);
#if defined(__CUDA_ARCH__)
  // Unfused, so the GPU's taps equal the CPU's bit for bit (x86-64-v2 has no FMA to contract into).
  A src;
  if constexpr (sizeof(A) == 4) src = __fsub_rn(__fmul_rn(scale, static_cast<A>(dst) + A(0.5)), A(0.5));
  else src = __dsub_rn(__dmul_rn(scale, static_cast<A>(dst) + A(0.5)), A(0.5));
#else
  A src = scale * (static_cast<A>(dst) + A(0.5)) - A(0.5);
#endif
  if (src < A(0)) src = A(0);
  i0 = static_cast<int64_t>(src);
  if (i0 > in - 1) i0 = in - 1;
  i1 = i0 < in - 1 ? i0 + 1 : i0;
  w1 = src - static_cast<A>(i0);
}

}  // namespace vt::kernels
