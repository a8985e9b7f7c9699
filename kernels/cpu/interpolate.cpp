// Bilinear resize on the CPU (see interpolate.h). The taps of every output row and column are computed once;
// the backward scatters each output gradient into its four sources within one plane, and planes run in parallel,
// so there are no races and the result does not depend on the thread count.
#include "kernels/cpu/interpolate.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/bilinear_taps.h"

namespace vt::kernels::cpu {

namespace {

template <typename A>
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<A> w1;
  Taps(int64_t in, int64_t out) : i0(out), i1(out), w1(out) {
    for (int64_t d = 0; d < out; ++d) bilinear_taps<A>(d, in, out, i0[d], i1[d], w1[d]);
  }
};

constexpr int64_t kParallelMin = 32768;

template <typename T>
void forward_impl(T* out, const T* x, const BilinearShape& s) {
  const Taps<T> ty(s.in_h, s.out_h), tx(s.in_w, s.out_w);
  const int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
#pragma omp parallel for if (s.planes * out_plane > kParallelMin) schedule(static)
  for (int64_t p = 0; p < s.planes; ++p) {
    const T* xp = x + p * in_plane;
    T* op = out + p * out_plane;
    for (int64_t oy = 0; oy < s.out_h; ++oy) {
      const T* r0 = xp + ty.i0[oy] * s.in_w;
      const T* r1 = xp + ty.i1[oy] * s.in_w;
      const T wy1 = ty.w1[oy], wy0 = T(1) - wy1;
      for (int64_t ox = 0; ox < s.out_w; ++ox) {
        const int64_t x0 = tx.i0[ox], x1 = tx.i1[ox];
        const T wx1 = tx.w1[ox], wx0 = T(1) - wx1;
        op[oy * s.out_w + ox] = wy0 * (wx0 * r0[x0] + wx1 * r0[x1]) + wy1 * (wx0 * r1[x0] + wx1 * r1[x1]);
      }
    }
  }
}

template <typename T>
void backward_impl(T* dx, const T* dout, const BilinearShape& s) {
  const Taps<T> ty(s.in_h, s.out_h), tx(s.in_w, s.out_w);
  const int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
#pragma omp parallel for if (s.planes * out_plane > kParallelMin) schedule(static)
  for (int64_t p = 0; p < s.planes; ++p) {
    T* dp = dx + p * in_plane;
    const T* gp = dout + p * out_plane;
    std::fill(dp, dp + in_plane, T(0));
    for (int64_t oy = 0; oy < s.out_h; ++oy) {
      T* r0 = dp + ty.i0[oy] * s.in_w;
      T* r1 = dp + ty.i1[oy] * s.in_w;
      const T wy1 = ty.w1[oy], wy0 = T(1) - wy1;
      for (int64_t ox = 0; ox < s.out_w; ++ox) {
        const int64_t x0 = tx.i0[ox], x1 = tx.i1[ox];
        const T wx1 = tx.w1[ox], wx0 = T(1) - wx1;
        const T g = gp[oy * s.out_w + ox];
        r0[x0] += wy0 * wx0 * g;
        r0[x1] += wy0 * wx1 * g;
        r1[x0] += wy1 * wx0 * g;
        r1[x1] += wy1 * wx1 * g;
      }
    }
  }
}

}  // namespace

void bilinear_forward(DType dtype, void* out, const void* x, const BilinearShape& s) {
  VT_DISPATCH_FLOAT(dtype, "interpolate_bilinear",
                    [&] { forward_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(x), s); });
}

void bilinear_backward(DType dtype, void* dx, const void* dout, const BilinearShape& s) {
  VT_DISPATCH_FLOAT(dtype, "interpolate_bilinear_backward",
                    [&] { backward_impl(static_cast<scalar_t*>(dx), static_cast<const scalar_t*>(dout), s); });
}

}  // namespace vt::kernels::cpu
