// Loss kernels: per-row log-sum-exp in double, loss sums reduced in double across OpenMP threads.
#include "kernels/cpu/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

constexpr int64_t kParallelMin = 16384;

template <typename T>
double row_lse(const T* xr, int64_t C) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c) m = std::max(m, static_cast<double>(xr[c]));
  if (m == -std::numeric_limits<double>::infinity()) m = 0;
  double s = 0;
  for (int64_t c = 0; c < C; ++c) s += std::exp(static_cast<double>(xr[c]) - m);
  return m + std::log(s);
}

template <typename T>
double ce_forward(T* lse, const T* x, const int64_t* target, int64_t B, int64_t C, double s) {
  double total = 0;
#pragma omp parallel for reduction(+ : total) if (B * C > kParallelMin) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const T* xr = x + b * C;
    const double l = row_lse(xr, C);
    lse[b] = static_cast<T>(l);
    double loss = (1.0 - s) * (l - static_cast<double>(xr[target[b]]));
    if (s != 0) {
      double sum_x = 0;
      for (int64_t c = 0; c < C; ++c) sum_x += xr[c];
      loss += s * (l - sum_x / static_cast<double>(C));
    }
    total += loss;
  }
  return total;
}

template <typename T>
void ce_backward(T* dx, const T* x, const T* lse, const int64_t* target, int64_t B, int64_t C, double s, double scale) {
  const T off = static_cast<T>(s / static_cast<double>(C) * scale);
  const T on = static_cast<T>((1.0 - s) * scale);
  const T sc = static_cast<T>(scale);
#pragma omp parallel for if (B * C > kParallelMin) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const T* xr = x + b * C;
    T* dr = dx + b * C;
    const T l = lse[b];
    for (int64_t c = 0; c < C; ++c) dr[c] = std::exp(xr[c] - l) * sc - off;
    dr[target[b]] -= on;
  }
}

template <typename T>
double soft_forward(T* lse, const T* x, const T* t, int64_t B, int64_t C) {
  double total = 0;
#pragma omp parallel for reduction(+ : total) if (B * C > kParallelMin) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const T* xr = x + b * C;
    const T* tr = t + b * C;
    const double l = row_lse(xr, C);
    lse[b] = static_cast<T>(l);
    double loss = 0;
    for (int64_t c = 0; c < C; ++c) loss -= static_cast<double>(tr[c]) * (static_cast<double>(xr[c]) - l);
    total += loss;
  }
  return total;
}

template <typename T>
void soft_backward(T* dx, T* dt, const T* x, const T* t, const T* lse, int64_t B, int64_t C, double scale) {
  const T sc = static_cast<T>(scale);
#pragma omp parallel for if (B * C > kParallelMin) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const T* xr = x + b * C;
    const T* tr = t + b * C;
    const T l = lse[b];
    if (dx) {
      double st = 0;  // Σ target: 1 for proper distributions, kept general so the gradient is exact
      for (int64_t c = 0; c < C; ++c) st += tr[c];
      const T stc = static_cast<T>(st);
      T* dr = dx + b * C;
      for (int64_t c = 0; c < C; ++c) dr[c] = (std::exp(xr[c] - l) * stc - tr[c]) * sc;
    }
    if (dt) {
      T* dr = dt + b * C;
      for (int64_t c = 0; c < C; ++c) dr[c] = -(xr[c] - l) * sc;
    }
  }
}

}  // namespace

double cross_entropy_forward(DType dtype, void* lse, const void* logits, const int64_t* target, int64_t B, int64_t C,
                             double smoothing) {
  return VT_DISPATCH_FLOAT(dtype, "cross_entropy", [&] {
    return ce_forward(static_cast<scalar_t*>(lse), static_cast<const scalar_t*>(logits), target, B, C, smoothing);
  });
}

void cross_entropy_backward(DType dtype, void* dlogits, const void* logits, const void* lse, const int64_t* target,
                            int64_t B, int64_t C, double smoothing, double scale) {
  VT_DISPATCH_FLOAT(dtype, "cross_entropy_backward", [&] {
    ce_backward(static_cast<scalar_t*>(dlogits), static_cast<const scalar_t*>(logits),
                static_cast<const scalar_t*>(lse), target, B, C, smoothing, scale);
  });
}

double soft_target_cross_entropy_forward(DType dtype, void* lse, const void* logits, const void* target, int64_t B,
                                         int64_t C) {
  return VT_DISPATCH_FLOAT(dtype, "soft_target_cross_entropy", [&] {
    return soft_forward(static_cast<scalar_t*>(lse), static_cast<const scalar_t*>(logits),
                        static_cast<const scalar_t*>(target), B, C);
  });
}

void soft_target_cross_entropy_backward(DType dtype, void* dlogits, void* dtarget, const void* logits,
                                        const void* target, const void* lse, int64_t B, int64_t C, double scale) {
  VT_DISPATCH_FLOAT(dtype, "soft_target_cross_entropy_backward", [&] {
    soft_backward(static_cast<scalar_t*>(dlogits), static_cast<scalar_t*>(dtarget),
                  static_cast<const scalar_t*>(logits), static_cast<const scalar_t*>(target),
                  static_cast<const scalar_t*>(lse), B, C, scale);
  });
}

}  // namespace vt::kernels::cpu
