// Pixel cross-entropy on the CPU: one pixel at a time, its K logits read with stride P, log-sum-exp in double;
// the sum over pixels is an OpenMP reduction in double.
#include "kernels/cpu/pixel_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

constexpr int64_t kParallelMin = 16384;

template <typename T>
double pixel_lse(const T* x, int64_t K, int64_t P) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < K; ++k) m = std::max(m, static_cast<double>(x[k * P]));
  if (m == -std::numeric_limits<double>::infinity()) m = 0;
  double s = 0;
  for (int64_t k = 0; k < K; ++k) s += std::exp(static_cast<double>(x[k * P]) - m);
  return m + std::log(s);
}

template <typename T>
PixelCeSum forward_impl(T* lse, const T* x, const int64_t* target, const PixelCeShape& s) {
  const int64_t K = s.K, P = s.P, n = s.B * P;
  double total = 0;
  int64_t count = 0;
#pragma omp parallel for reduction(+ : total, count) if (n * K > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = i / P, p = i % P;
    const int64_t t = target[i];
    if (t == s.ignore_index) {
      lse[i] = T(0);
      continue;
    }
    const T* xp = x + b * K * P + p;
    const double l = pixel_lse(xp, K, P);
    lse[i] = static_cast<T>(l);
    total += l - static_cast<double>(xp[t * P]);
    ++count;
  }
  return {total, count};
}

template <typename T>
void backward_impl(T* dx, const T* x, const T* lse, const int64_t* target, const PixelCeShape& s, double scale) {
  const int64_t K = s.K, P = s.P, n = s.B * P;
  const T sc = static_cast<T>(scale);
#pragma omp parallel for if (n * K > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = i / P, p = i % P;
    const int64_t t = target[i];
    const T* xp = x + b * K * P + p;
    T* dp = dx + b * K * P + p;
    if (t == s.ignore_index) {
      for (int64_t k = 0; k < K; ++k) dp[k * P] = T(0);
      continue;
    }
    const T l = lse[i];
    for (int64_t k = 0; k < K; ++k) dp[k * P] = std::exp(xp[k * P] - l) * sc;
    dp[t * P] -= sc;
  }
}

}  // namespace

PixelCeSum pixel_cross_entropy_forward(DType dtype, void* lse, const void* logits, const int64_t* target,
                                       const PixelCeShape& s) {
  return VT_DISPATCH_FLOAT(dtype, "pixel_cross_entropy", [&] {
    return forward_impl(static_cast<scalar_t*>(lse), static_cast<const scalar_t*>(logits), target, s);
  });
}

void pixel_cross_entropy_backward(DType dtype, void* dlogits, const void* logits, const void* lse,
                                  const int64_t* target, const PixelCeShape& s, double scale) {
  VT_DISPATCH_FLOAT(dtype, "pixel_cross_entropy_backward", [&] {
    backward_impl(static_cast<scalar_t*>(dlogits), static_cast<const scalar_t*>(logits),
                  static_cast<const scalar_t*>(lse), target, s, scale);
  });
}

}  // namespace vt::kernels::cpu
