#include "kernels/cpu/pool.h"

#include <algorithm>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

template <typename T>
void pool_forward_impl(T* out, const T* x, int64_t N, int64_t H, int64_t W, int64_t oh, int64_t ow) {
#pragma omp parallel for if (N * H * W > 65536) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const T* plane = x + n * H * W;
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t y0 = adaptive_bin_start(i, H, oh), y1 = adaptive_bin_end(i, H, oh);
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t x0 = adaptive_bin_start(j, W, ow), x1 = adaptive_bin_end(j, W, ow);
        double acc = 0;
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t k = x0; k < x1; ++k) acc += plane[y * W + k];
        out[(n * oh + i) * ow + j] = static_cast<T>(acc / static_cast<double>((y1 - y0) * (x1 - x0)));
      }
    }
  }
}

template <typename T>
void pool_backward_impl(T* dx, const T* g, int64_t N, int64_t H, int64_t W, int64_t oh, int64_t ow) {
#pragma omp parallel for if (N * H * W > 65536) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    T* plane = dx + n * H * W;
    std::fill(plane, plane + H * W, T(0));
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t y0 = adaptive_bin_start(i, H, oh), y1 = adaptive_bin_end(i, H, oh);
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t x0 = adaptive_bin_start(j, W, ow), x1 = adaptive_bin_end(j, W, ow);
        const T share = g[(n * oh + i) * ow + j] / static_cast<T>((y1 - y0) * (x1 - x0));
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t k = x0; k < x1; ++k) plane[y * W + k] += share;
      }
    }
  }
}

}  // namespace

void adaptive_avg_pool2d_forward(DType dtype, void* out, const void* x, int64_t N, int64_t H, int64_t W, int64_t oh,
                                 int64_t ow) {
  VT_DISPATCH_FLOAT(dtype, "adaptive_avg_pool", [&] {
    pool_forward_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(x), N, H, W, oh, ow);
  });
}

void adaptive_avg_pool2d_backward(DType dtype, void* dx, const void* g, int64_t N, int64_t H, int64_t W, int64_t oh,
                                  int64_t ow) {
  VT_DISPATCH_FLOAT(dtype, "adaptive_avg_pool", [&] {
    pool_backward_impl(static_cast<scalar_t*>(dx), static_cast<const scalar_t*>(g), N, H, W, oh, ow);
  });
}

}  // namespace vt::kernels::cpu
