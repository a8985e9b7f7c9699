#include "kernels/cpu/conv.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

// Copies between image and patch rows; to_cols picks the direction. One (b, gy) band of patches per iteration.
template <typename T>
void patch_copy(T* cols, T* img, int64_t B, int64_t C, int64_t Gh, int64_t Gw, int64_t p, bool to_cols) {
  const int64_t W = Gw * p, HW = Gh * p * W, K = C * p * p;
#pragma omp parallel for collapse(2) if (B * C * HW > 65536) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t gy = 0; gy < Gh; ++gy)
      for (int64_t gx = 0; gx < Gw; ++gx) {
        T* row = cols + ((b * Gh + gy) * Gw + gx) * K;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ky = 0; ky < p; ++ky) {
            T* pix = img + (b * C + c) * HW + (gy * p + ky) * W + gx * p;
            T* col = row + (c * p + ky) * p;
            if (to_cols) std::copy(pix, pix + p, col);
            else std::copy(col, col + p, pix);
          }
      }
}

// For tap offset d in [-K/2, K/2]: output positions [lo, hi) whose input position (pos + d) is inside [0, n).
inline void valid_range(int64_t d, int64_t n, int64_t& lo, int64_t& hi) {
  lo = std::max<int64_t>(0, -d);
  hi = std::min<int64_t>(n, n - d);
}

template <typename T>
void dw_forward_impl(T* out, const T* x, const T* w, const T* bias, int64_t B, int64_t C, int64_t H, int64_t W,
                     int64_t K) {
  const int64_t HW = H * W, r = K / 2;
#pragma omp parallel for collapse(2) if (B * C * HW > 16384) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const T* xp = x + (b * C + c) * HW;
      T* op = out + (b * C + c) * HW;
      const T* wc = w + c * K * K;
      std::fill(op, op + HW, bias ? bias[c] : T(0));
      for (int64_t ky = 0; ky < K; ++ky) {
        int64_t y0, y1;
        valid_range(ky - r, H, y0, y1);
        for (int64_t kx = 0; kx < K; ++kx) {
          int64_t x0, x1;
          valid_range(kx - r, W, x0, x1);
          const T wv = wc[ky * K + kx];
          for (int64_t y = y0; y < y1; ++y) {
            T* orow = op + y * W;
            const T* irow = xp + (y + ky - r) * W;
            for (int64_t i = x0; i < x1; ++i) orow[i] += wv * irow[i + kx - r];
          }
        }
      }
    }
}

template <typename T>
void dw_backward_impl(T* dx, T* dw, T* db, const T* g, const T* x, const T* w, int64_t B, int64_t C, int64_t H,
                      int64_t W, int64_t K) {
  const int64_t HW = H * W, r = K / 2, taps = K * K, slots = taps + 1;
  // Per-(b, c) partial sums of dweight (K² taps) and dbias (slot K²), reduced over b afterwards in a fixed order.
  std::vector<double> part(dw || db ? static_cast<size_t>(B * C * slots) : 0);
#pragma omp parallel for collapse(2) if (B * C * HW > 16384) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t plane = (b * C + c) * HW;
      const T* gp = g + plane;
      const T* xp = x + plane;
      const T* wc = w + c * taps;
      if (dx) std::fill(dx + plane, dx + plane + HW, T(0));
      for (int64_t ky = 0; ky < K; ++ky) {
        int64_t y0, y1;
        valid_range(ky - r, H, y0, y1);
        for (int64_t kx = 0; kx < K; ++kx) {
          int64_t x0, x1;
          valid_range(kx - r, W, x0, x1);
          const T wv = wc[ky * K + kx];
          double acc = 0;
          for (int64_t y = y0; y < y1; ++y) {
            const T* grow = gp + y * W;
            const int64_t in_row = (y + ky - r) * W;
            if (dx) {
              T* drow = dx + plane + in_row;
              for (int64_t i = x0; i < x1; ++i) drow[i + kx - r] += wv * grow[i];
            }
            if (dw) {
              const T* irow = xp + in_row;
              for (int64_t i = x0; i < x1; ++i) acc += static_cast<double>(grow[i]) * irow[i + kx - r];
            }
          }
          if (dw) part[(b * C + c) * slots + ky * K + kx] = acc;
        }
      }
      if (db) {
        double s = 0;
        for (int64_t i = 0; i < HW; ++i) s += gp[i];
        part[(b * C + c) * slots + taps] = s;
      }
    }
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < slots; ++t) {
      if ((t < taps && !dw) || (t == taps && !db)) continue;
      double s = 0;
      for (int64_t b = 0; b < B; ++b) s += part[(b * C + c) * slots + t];
      if (t < taps) dw[c * taps + t] = static_cast<T>(s);
      else db[c] = static_cast<T>(s);
    }
}

}  // namespace

void im2col_patch(DType dtype, void* cols, const void* x, int64_t B, int64_t C, int64_t Gh, int64_t Gw, int64_t p) {
  VT_DISPATCH_FLOAT(dtype, "conv2d_patch", [&] {
    patch_copy(static_cast<scalar_t*>(cols), const_cast<scalar_t*>(static_cast<const scalar_t*>(x)), B, C, Gh, Gw, p,
               true);
  });
}

void col2im_patch(DType dtype, void* dx, const void* cols, int64_t B, int64_t C, int64_t Gh, int64_t Gw, int64_t p) {
  VT_DISPATCH_FLOAT(dtype, "conv2d_patch", [&] {
    patch_copy(const_cast<scalar_t*>(static_cast<const scalar_t*>(cols)), static_cast<scalar_t*>(dx), B, C, Gh, Gw, p,
               false);
  });
}

void depthwise_forward(DType dtype, void* out, const void* x, const void* weight, const void* bias, int64_t B,
                       int64_t C, int64_t H, int64_t W, int64_t K) {
  VT_CHECK(K % 2 == 1, "[depthwise_conv2d] kernel side ", K, " is not odd");
  VT_DISPATCH_FLOAT(dtype, "depthwise_conv2d", [&] {
    dw_forward_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(weight),
                    static_cast<const scalar_t*>(bias), B, C, H, W, K);
  });
}

void depthwise_backward(DType dtype, void* dx, void* dweight, void* dbias, const void* g, const void* x,
                        const void* weight, int64_t B, int64_t C, int64_t H, int64_t W, int64_t K) {
  VT_CHECK(K % 2 == 1, "[depthwise_conv2d] kernel side ", K, " is not odd");
  VT_DISPATCH_FLOAT(dtype, "depthwise_conv2d", [&] {
    dw_backward_impl(static_cast<scalar_t*>(dx), static_cast<scalar_t*>(dweight), static_cast<scalar_t*>(dbias),
                     static_cast<const scalar_t*>(g), static_cast<const scalar_t*>(x),
                     static_cast<const scalar_t*>(weight), B, C, H, W, K);
  });
}

}  // namespace vt::kernels::cpu
