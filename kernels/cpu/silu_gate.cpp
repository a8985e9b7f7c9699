#include "kernels/cpu/silu_gate.h"

#include <cmath>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

// f(row) for every row, over OpenMP threads when the work is large (a pragma cannot sit in a dispatch macro).
template <typename F>
void for_rows(int64_t rows, int64_t cols, F&& f) {
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r) f(r);
}

}  // namespace

void silu_gate_forward(DType dtype, void* y, const void* x, int64_t x_stride, const void* g, int64_t g_stride,
                       int64_t rows, int64_t cols) {
  VT_DISPATCH_FLOAT(dtype, "silu_gate", [&] {
    using T = scalar_t;
    T* out = static_cast<T*>(y);
    const T *xs = static_cast<const T*>(x), *gs = static_cast<const T*>(g);
    for_rows(rows, cols, [&](int64_t r) {
      for (int64_t c = 0; c < cols; ++c) {
        const T gv = gs[r * g_stride + c];
        out[r * cols + c] = xs[r * x_stride + c] * (gv / (T(1) + std::exp(-gv)));
      }
    });
  });
}

void silu_gate_backward(DType dtype, void* dx, void* dg, const void* dy, const void* x, int64_t x_stride, const void* g,
                        int64_t g_stride, int64_t rows, int64_t cols) {
  VT_DISPATCH_FLOAT(dtype, "silu_gate_backward", [&] {
    using T = scalar_t;
    T *gx = static_cast<T*>(dx), *gg = static_cast<T*>(dg);
    const T *go = static_cast<const T*>(dy), *xs = static_cast<const T*>(x), *gs = static_cast<const T*>(g);
    for_rows(rows, cols, [&](int64_t r) {
      for (int64_t c = 0; c < cols; ++c) {
        const T gv = gs[r * g_stride + c], d = go[r * cols + c];
        const T s = T(1) / (T(1) + std::exp(-gv));
        gx[r * cols + c] = d * gv * s;
        gg[r * cols + c] = d * xs[r * x_stride + c] * s * (T(1) + gv * (T(1) - s));
      }
    });
  });
}

}  // namespace vt::kernels::cpu
