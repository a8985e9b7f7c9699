// Warp-level pieces shared by the row kernels (softmax, LayerNorm, cross-entropy, MiTA): a warp sum and max, and
// the online (max, Σ exp(x − max)) pair that builds a log-sum-exp in one pass over a row.
#pragma once
#include <cuda_runtime.h>

#include <cmath>

namespace vt::kernels::cuda::device {

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Running max m and Σ exp(x − m) of a part of a row.
struct MaxSum {
  float m, s;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};  // both parts empty or all -inf: avoid exp(-inf - -inf)
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ MaxSum add_value(MaxSum a, float v) {
  if (v > a.m) return {v, a.s * expf(a.m - v) + 1.f};
  if (!(v == -INFINITY)) a.s += expf(v - a.m);  // NaN goes in, so it reaches the whole row as on the CPU
  return a;
}

__device__ __forceinline__ MaxSum warp_maxsum(MaxSum v) {
  for (int o = 16; o > 0; o >>= 1)
    v = combine(v, {__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
  return v;
}

}  // namespace vt::kernels::cuda::device
