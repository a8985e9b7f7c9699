// LayerNorm kernels. Row statistics are two-pass in double (rows are short and in cache, so the second pass
// is cheap and f32 keeps full accuracy even for large means). Rows are split across OpenMP threads; the
// weight/bias gradients are accumulated per thread in double and summed at the end.
#include "kernels/cpu/layer_norm.h"

#include <cmath>
#include <vector>

#include <omp.h>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

constexpr int64_t kParallelMin = 8192;  // elements; below this the fork/join costs more than it saves

template <typename T>
void forward_impl(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b, int64_t rows, int64_t C, double eps) {
#pragma omp parallel for if (rows * C > kParallelMin) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const T* xr = x + i * C;
    T* yr = y + i * C;
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t c = 0; c < C; ++c) s += xr[c];
    const double mu = s / static_cast<double>(C);
    double v = 0;
#pragma omp simd reduction(+ : v)
    for (int64_t c = 0; c < C; ++c) {
      const double d = xr[c] - mu;
      v += d * d;
    }
    const double rs = 1.0 / std::sqrt(v / static_cast<double>(C) + eps);
    mean[i] = static_cast<T>(mu);
    rstd[i] = static_cast<T>(rs);
    const T m = static_cast<T>(mu), r = static_cast<T>(rs);
    if (w && b) {
      for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) * r * w[c] + b[c];
    } else if (w) {
      for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) * r * w[c];
    } else if (b) {
      for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) * r + b[c];
    } else {
      for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) * r;
    }
  }
}

template <typename T>
void backward_impl(T* dx, const T* dres, T* dw, T* db, const T* dy, const T* x, const T* mean, const T* rstd,
                   const T* w, int64_t rows, int64_t C) {
  const bool par = rows * C > kParallelMin;
  const int nthreads = par ? omp_get_max_threads() : 1;
  const bool want_wb = dw || db;
  // Per-thread partial sums of dw (first C) and db (next C).
  std::vector<double> partial(want_wb ? static_cast<size_t>(nthreads) * 2 * C : 0, 0.0);
#pragma omp parallel num_threads(nthreads) if (par)
  {
    const int tid = omp_get_thread_num();
    double* pdw = want_wb ? partial.data() + static_cast<size_t>(tid) * 2 * C : nullptr;
    double* pdb = want_wb ? pdw + C : nullptr;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const T* xr = x + i * C;
      const T* dyr = dy + i * C;
      const T m = mean[i], r = rstd[i];
      if (want_wb) {
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) {
          pdw[c] += static_cast<double>(dyr[c] * ((xr[c] - m) * r));
          pdb[c] += static_cast<double>(dyr[c]);
        }
      }
      if (dx) {
        double sg = 0, sgx = 0;  // Σ g, Σ g·x̂
        if (w) {
#pragma omp simd reduction(+ : sg, sgx)
          for (int64_t c = 0; c < C; ++c) {
            const T g = dyr[c] * w[c];
            sg += g;
            sgx += g * ((xr[c] - m) * r);
          }
        } else {
#pragma omp simd reduction(+ : sg, sgx)
          for (int64_t c = 0; c < C; ++c) {
            sg += dyr[c];
            sgx += dyr[c] * ((xr[c] - m) * r);
          }
        }
        const T a = static_cast<T>(sg / static_cast<double>(C));
        const T bq = static_cast<T>(sgx / static_cast<double>(C));
        T* dxr = dx + i * C;
        if (w) {
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) dxr[c] = r * (dyr[c] * w[c] - a - (xr[c] - m) * r * bq);
        } else {
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) dxr[c] = r * (dyr[c] - a - (xr[c] - m) * r * bq);
        }
        if (dres) {
          const T* rr = dres + i * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) dxr[c] = rr[c] + dxr[c];
        }
      }
    }
  }
  if (!want_wb) return;
  for (int64_t c = 0; c < C; ++c) {
    double sw = 0, sb = 0;
    for (int t = 0; t < nthreads; ++t) {
      sw += partial[static_cast<size_t>(t) * 2 * C + c];
      sb += partial[static_cast<size_t>(t) * 2 * C + C + c];
    }
    if (dw) dw[c] = static_cast<T>(sw);
    if (db) db[c] = static_cast<T>(sb);
  }
}

}  // namespace

void layer_norm_forward(DType dtype, void* y, void* mean, void* rstd, const void* x, const void* w, const void* b,
                        int64_t rows, int64_t C, double eps) {
  VT_DISPATCH_FLOAT(dtype, "layer_norm", [&] {
    using T = scalar_t;
    forward_impl(static_cast<T*>(y), static_cast<T*>(mean), static_cast<T*>(rstd), static_cast<const T*>(x),
                 static_cast<const T*>(w), static_cast<const T*>(b), rows, C, eps);
  });
}

void layer_norm_backward(DType dtype, void* dx, const void* dres, void* dw, void* db, const void* dy, const void* x,
                         const void* mean, const void* rstd, const void* w, int64_t rows, int64_t C) {
  VT_DISPATCH_FLOAT(dtype, "layer_norm_backward", [&] {
    using T = scalar_t;
    backward_impl(static_cast<T*>(dx), static_cast<const T*>(dres), static_cast<T*>(dw), static_cast<T*>(db),
                  static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(mean),
                  static_cast<const T*>(rstd), static_cast<const T*>(w), rows, C);
  });
}

}  // namespace vt::kernels::cpu
