// Softmax kernels. The last-dim case (inner = 1) walks each row contiguously; the general case walks the R
// slices of an (R, inner) block in order with per-column running values, so memory access stays sequential.
#include "kernels/cpu/softmax.h"

#include "kernels/cpu/fast_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

template <typename T>
void softmax_rows(T* y, const T* x, int64_t rows, int64_t R, bool log) {
#pragma omp parallel for if (rows * R > 16384) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const T* xr = x + i * R;
    T* yr = y + i * R;
    T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
    for (int64_t r = 0; r < R; ++r) m = std::max(m, xr[r]);
    if (m == -std::numeric_limits<T>::infinity()) m = 0;  // an all -inf row gives NaN as torch, not inf - inf
    double s = 0;
    if (log) {
#pragma omp simd reduction(+ : s)
      for (int64_t r = 0; r < R; ++r) s += exp_nonpos(xr[r] - m);
      const T lse = static_cast<T>(m + std::log(s));
#pragma omp simd
      for (int64_t r = 0; r < R; ++r) yr[r] = xr[r] - lse;
    } else {
#pragma omp simd reduction(+ : s)
      for (int64_t r = 0; r < R; ++r) {
        const T e = exp_nonpos(xr[r] - m);
        yr[r] = e;
        s += e;
      }
      const T inv = static_cast<T>(1.0 / s);
#pragma omp simd
      for (int64_t r = 0; r < R; ++r) yr[r] *= inv;
    }
  }
}

template <typename T>
void softmax_strided(T* y, const T* x, int64_t outer, int64_t R, int64_t inner, bool log) {
#pragma omp parallel for if (outer * R * inner > 16384) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    const T* xb = x + o * R * inner;
    T* yb = y + o * R * inner;
    std::vector<T> m(inner, -std::numeric_limits<T>::infinity());
    std::vector<double> s(inner, 0.0);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < inner; ++j) m[j] = std::max(m[j], xb[r * inner + j]);
    for (int64_t j = 0; j < inner; ++j)
      if (m[j] == -std::numeric_limits<T>::infinity()) m[j] = 0;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < inner; ++j) {
        const T e = exp_nonpos(xb[r * inner + j] - m[j]);
        if (!log) yb[r * inner + j] = e;
        s[j] += e;
      }
    if (log) {
      for (int64_t j = 0; j < inner; ++j) m[j] = static_cast<T>(m[j] + std::log(s[j]));  // m becomes lse
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < inner; ++j) yb[r * inner + j] = xb[r * inner + j] - m[j];
    } else {
      for (int64_t j = 0; j < inner; ++j) s[j] = 1.0 / s[j];
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < inner; ++j) yb[r * inner + j] *= static_cast<T>(s[j]);
    }
  }
}

template <typename T>
void softmax_backward_rows(T* dx, const T* dy, const T* y, int64_t rows, int64_t R, bool log) {
#pragma omp parallel for if (rows * R > 16384) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const T* dyr = dy + i * R;
    const T* yr = y + i * R;
    T* dxr = dx + i * R;
    double s = 0;
    if (log) {
#pragma omp simd reduction(+ : s)
      for (int64_t r = 0; r < R; ++r) s += dyr[r];
      const T st = static_cast<T>(s);
#pragma omp simd
      for (int64_t r = 0; r < R; ++r) dxr[r] = dyr[r] - exp_nonpos(yr[r]) * st;  // y = log p <= 0
    } else {
#pragma omp simd reduction(+ : s)
      for (int64_t r = 0; r < R; ++r) s += dyr[r] * yr[r];
      const T st = static_cast<T>(s);
#pragma omp simd
      for (int64_t r = 0; r < R; ++r) dxr[r] = yr[r] * (dyr[r] - st);
    }
  }
}

template <typename T>
void softmax_backward_strided(T* dx, const T* dy, const T* y, int64_t outer, int64_t R, int64_t inner, bool log) {
#pragma omp parallel for if (outer * R * inner > 16384) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * R * inner;
    std::vector<double> s(inner, 0.0);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t k = base + r * inner + j;
        s[j] += log ? dy[k] : dy[k] * y[k];
      }
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t k = base + r * inner + j;
        const T st = static_cast<T>(s[j]);
        dx[k] = log ? dy[k] - exp_nonpos(y[k]) * st : y[k] * (dy[k] - st);
      }
  }
}

}  // namespace

void softmax_forward(DType dtype, void* y, const void* x, int64_t outer, int64_t R, int64_t inner, bool log) {
  VT_DISPATCH_FLOAT(dtype, log ? "log_softmax" : "softmax", [&] {
    auto* yp = static_cast<scalar_t*>(y);
    const auto* xp = static_cast<const scalar_t*>(x);
    if (inner == 1) softmax_rows(yp, xp, outer, R, log);
    else softmax_strided(yp, xp, outer, R, inner, log);
  });
}

void softmax_backward(DType dtype, void* dx, const void* dy, const void* y, int64_t outer, int64_t R, int64_t inner,
                      bool log) {
  VT_DISPATCH_FLOAT(dtype, log ? "log_softmax_backward" : "softmax_backward", [&] {
    auto* dxp = static_cast<scalar_t*>(dx);
    const auto* dyp = static_cast<const scalar_t*>(dy);
    const auto* yp = static_cast<const scalar_t*>(y);
    if (inner == 1) softmax_backward_rows(dxp, dyp, yp, outer, R, log);
    else softmax_backward_strided(dxp, dyp, yp, outer, R, inner, log);
  });
}

}  // namespace vt::kernels::cpu
