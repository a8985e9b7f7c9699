// L2 normalization on the CPU: one row at a time, sums in double, rows in parallel.
#include "kernels/cpu/l2_normalize.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

constexpr int64_t kParallelMin = 16384;

template <typename T>
void forward_impl(T* y, T* norm, const T* x, int64_t rows, int64_t C, double eps) {
#pragma omp parallel for if (rows * C > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    double ss = 0;
    for (int64_t c = 0; c < C; ++c) ss += static_cast<double>(xr[c]) * static_cast<double>(xr[c]);
    const double n = std::sqrt(ss);
    norm[r] = static_cast<T>(n);
    const double inv = 1.0 / std::max(n, eps);
    for (int64_t c = 0; c < C; ++c) y[r * C + c] = static_cast<T>(static_cast<double>(xr[c]) * inv);
  }
}

template <typename T>
void backward_impl(T* dx, const T* g, const T* x, const T* norm, int64_t rows, int64_t C, double eps) {
#pragma omp parallel for if (rows * C > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    const T* gr = g + r * C;
    const double n = static_cast<double>(norm[r]);
    const double inv = 1.0 / std::max(n, eps);
    double yg = 0;  // y·g, only needed when the norm is not clamped
    if (n >= eps)
      for (int64_t c = 0; c < C; ++c) yg += static_cast<double>(xr[c]) * inv * static_cast<double>(gr[c]);
    for (int64_t c = 0; c < C; ++c)
      dx[r * C + c] = static_cast<T>((static_cast<double>(gr[c]) - static_cast<double>(xr[c]) * inv * yg) * inv);
  }
}

}  // namespace

void l2_normalize_forward(DType dtype, void* y, void* norm, const void* x, int64_t rows, int64_t C, double eps) {
  VT_DISPATCH_FLOAT(dtype, "l2_normalize", [&] {
    forward_impl(static_cast<scalar_t*>(y), static_cast<scalar_t*>(norm), static_cast<const scalar_t*>(x), rows, C,
                 eps);
  });
}

void l2_normalize_backward(DType dtype, void* dx, const void* g, const void* x, const void* norm, int64_t rows,
                           int64_t C, double eps) {
  VT_DISPATCH_FLOAT(dtype, "l2_normalize_backward", [&] {
    backward_impl(static_cast<scalar_t*>(dx), static_cast<const scalar_t*>(g), static_cast<const scalar_t*>(x),
                  static_cast<const scalar_t*>(norm), rows, C, eps);
  });
}

}  // namespace vt::kernels::cpu
