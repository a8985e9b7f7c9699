// Vectorisable f32 math for the hot element-wise kernels (GCC keeps std::exp/std::erf as scalar libm calls
// without -ffast-math). The f64 overloads are the exact libm functions, so gradient checks stay exact.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace vt::kernels::cpu {

// e^x in f32 for x <= 88, written so GCC vectorises it under `omp simd`: std::exp stays a scalar libm call
// without -ffast-math, and softmax is exp-bound. Cephes expf (x = n·ln2 + t, degree-6 polynomial in t,
// ~1.4 ulp); n is rounded with the 1.5·2^23 trick instead of floor/int casts, which GCC will not vectorise
// under -ftrapping-math. Inputs below -87.3 (including -inf) give 0; NaN stays NaN.
inline float exp_nonpos(float x) {
  const uint32_t xb = std::bit_cast<uint32_t>(x);
  const uint32_t keep = 0u - static_cast<uint32_t>(xb <= 0xC2AE999Au);  // all ones unless x < -87.3 (by bits)
  x = std::bit_cast<float>((xb & keep) | (0xC2AE999Au & ~keep));
  const float k = x * 1.44269504088896341f + 12582912.0f;  // low mantissa bits of k hold n = round(x·log2 e)
  const float n = k - 12582912.0f;
  float t = x - n * 0.693359375f;
  t = t - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * t + 1.3981999507e-3f;
  p = p * t + 8.3334519073e-3f;
  p = p * t + 4.1665795894e-2f;
  p = p * t + 1.6666665459e-1f;
  p = p * t + 5.0000001201e-1f;
  p = p * t * t + t + 1.0f;
  const uint32_t two_n = ((std::bit_cast<uint32_t>(k) - 0x4B400000u + 127u) << 23) & keep;
  return p * std::bit_cast<float>(two_n);
}
inline double exp_nonpos(double x) { return std::exp(x); }

/// erf(x) for f32 given e = exp(-x²) (callers often need that exponential anyway): Abramowitz & Stegun 7.1.26,
/// absolute error below 1.5e-7.
inline float erf_with_exp(float x, float e) {
  const float ax = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float r = 1.0f - p * t * e;
  return std::copysign(r, x);
}
inline double erf_with_exp(double x, double) { return std::erf(x); }

}  // namespace vt::kernels::cpu
