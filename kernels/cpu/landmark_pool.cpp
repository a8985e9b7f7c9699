// Landmark pooling on the CPU (see landmark_pool.h). The forward sums each bin in f64 in the same order as
// adaptive_avg_pool2d (rows, then columns); the backward gathers: each (b, n) row finds the few bins that hold it,
// so rows are independent and the loop parallelises without races.
#include "kernels/cpu/landmark_pool.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/pool.h"

namespace vt::kernels::cpu {

namespace {

/// Tokens of landmark j: rows [y0, y1) × columns [x0, x1) of the grid (1-D: one row of L tokens).
struct Bin {
  int64_t y0, y1, x0, x1, width;
};

Bin bin_of(int64_t j, const LandmarkPoolShape& s) {
  if (s.grid > 0) {
    const int64_t r = j / s.pool, c = j % s.pool, G = s.grid, p = s.pool;
    return {adaptive_bin_start(r, G, p), adaptive_bin_end(r, G, p), adaptive_bin_start(c, G, p),
            adaptive_bin_end(c, G, p), G};
  }
  return {0, 1, adaptive_bin_start(j, s.L, s.m), adaptive_bin_end(j, s.L, s.m), s.L};
}

/// Bins of `out` over `in` that may hold position p: [lo, hi] (membership still to be checked).
void candidate_bins(int64_t p, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = std::max<int64_t>(0, (p * out) / in - 1);
  hi = std::min<int64_t>(out - 1, ((p + 1) * out) / in);
}

template <typename T>
void forward_impl(T* out, const T* x, const LandmarkPoolShape& s) {
  const int64_t C = s.C;
#pragma omp parallel for if (s.B * s.L * C > 65536) schedule(static)
  for (int64_t bj = 0; bj < s.B * s.m; ++bj) {
    const int64_t b = bj / s.m, j = bj % s.m;
    const Bin bin = bin_of(j, s);
    std::vector<double> acc(static_cast<size_t>(C), 0.0);
    for (int64_t y = bin.y0; y < bin.y1; ++y)
      for (int64_t xx = bin.x0; xx < bin.x1; ++xx) {
        const T* row = x + b * s.batch_stride + (s.first + y * bin.width + xx) * s.row_stride;
        for (int64_t c = 0; c < C; ++c) acc[c] += row[c];
      }
    const double count = static_cast<double>((bin.y1 - bin.y0) * (bin.x1 - bin.x0));
    T* o = out + bj * C;
    for (int64_t c = 0; c < C; ++c) o[c] = static_cast<T>(acc[c] / count);
  }
}

template <typename T>
void backward_impl(T* dx, const T* dout, const LandmarkPoolShape& s) {
  const int64_t C = s.C;
#pragma omp parallel for if (s.B * s.N * C > 65536) schedule(static)
  for (int64_t bn = 0; bn < s.B * s.N; ++bn) {
    const int64_t b = bn / s.N, t = bn % s.N - s.first;
    T* o = dx + bn * C;
    std::fill(o, o + C, T(0));
    if (t < 0 || t >= s.L) continue;
    const int64_t cols = s.grid > 0 ? s.pool : s.m;
    const int64_t y = s.grid > 0 ? t / s.grid : 0, xx = s.grid > 0 ? t % s.grid : t;
    int64_t r0 = 0, r1 = 0, c0, c1;
    if (s.grid > 0) candidate_bins(y, s.grid, s.pool, r0, r1);
    candidate_bins(xx, s.grid > 0 ? s.grid : s.L, cols, c0, c1);
    for (int64_t r = r0; r <= r1; ++r)
      for (int64_t c = c0; c <= c1; ++c) {
        const Bin bin = bin_of(r * cols + c, s);
        if (y < bin.y0 || y >= bin.y1 || xx < bin.x0 || xx >= bin.x1) continue;
        const T inv = T(1) / static_cast<T>((bin.y1 - bin.y0) * (bin.x1 - bin.x0));
        const T* g = dout + (b * s.m + r * cols + c) * C;
        for (int64_t k = 0; k < C; ++k) o[k] += g[k] * inv;
      }
  }
}

}  // namespace

void landmark_pool_forward(DType dtype, void* out, const void* x, const LandmarkPoolShape& s) {
  VT_DISPATCH_FLOAT(dtype, "mita_landmark_pool",
                    [&] { forward_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(x), s); });
}

void landmark_pool_backward(DType dtype, void* dx, const void* dout, const LandmarkPoolShape& s) {
  VT_DISPATCH_FLOAT(dtype, "mita_landmark_pool",
                    [&] { backward_impl(static_cast<scalar_t*>(dx), static_cast<const scalar_t*>(dout), s); });
}

}  // namespace vt::kernels::cpu
