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

// For tap offset d in {-1, 0, 1}: output positions [lo, hi) whose input position (pos + d) is inside [0, n).
inline void valid_range(int64_t d, int64_t n, int64_t& lo, int64_t& hi) {
  lo = std::max<int64_t>(0, -d);
  hi = std::min<int64_t>(n, n - d);
}

template <typename T>
void dw_forward_impl(T* out, const T* x, const T* w, const T* bias, int64_t B, int64_t C, int64_t H, int64_t W) {
  const int64_t HW = H * W;
#pragma omp parallel for collapse(2) if (B * C * HW > 16384) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const T* xp = x + (b * C + c) * HW;
      T* op = out + (b * C + c) * HW;
      const T* wc = w + c * 9;
      std::fill(op, op + HW, bias ? bias[c] : T(0));
      for (int64_t ky = 0; ky < 3; ++ky) {
        int64_t y0, y1;
        valid_range(ky - 1, H, y0, y1);
        for (int64_t kx = 0; kx < 3; ++kx) {
          int64_t x0, x1;
          valid_range(kx - 1, W, x0, x1);
          const T wv = wc[ky * 3 + kx];
          for (int64_t y = y0; y < y1; ++y) {
            T* orow = op + y * W;
            const T* irow = xp + (y + ky - 1) * W;
            for (int64_t i = x0; i < x1; ++i) orow[i] += wv * irow[i + kx - 1];
          }
        }
      }
    }
}

template <typename T>
void dw_backward_impl(T* dx, T* dw, T* db, const T* g, const T* x, const T* w, int64_t B, int64_t C, int64_t H,
                      int64_t W) {
  const int64_t HW = H * W;
  // Per-(b, c) partial sums of dweight (9 taps) and dbias (slot 9), reduced over b afterwards in a fixed order.
  std::vector<double> part(dw || db ? static_cast<size_t>(B * C * 10) : 0);
#pragma omp parallel for collapse(2) if (B * C * HW > 16384) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t plane = (b * C + c) * HW;
      const T* gp = g + plane;
      const T* xp = x + plane;
      const T* wc = w + c * 9;
      if (dx) std::fill(dx + plane, dx + plane + HW, T(0));
      for (int64_t ky = 0; ky < 3; ++ky) {
        int64_t y0, y1;
        valid_range(ky - 1, H, y0, y1);
        for (int64_t kx = 0; kx < 3; ++kx) {
          int64_t x0, x1;
          valid_range(kx - 1, W, x0, x1);
          const T wv = wc[ky * 3 + kx];
          double acc = 0;
          for (int64_t y = y0; y < y1; ++y) {
            const T* grow = gp + y * W;
            const int64_t in_row = (y + ky - 1) * W;
            if (dx) {
              T* drow = dx + plane + in_row;
              for (int64_t i = x0; i < x1; ++i) drow[i + kx - 1] += wv * grow[i];
            }
            if (dw) {
              const T* irow = xp + in_row;
              for (int64_t i = x0; i < x1; ++i) acc += static_cast<double>(grow[i]) * irow[i + kx - 1];
            }
          }
          if (dw) part[(b * C + c) * 10 + ky * 3 + kx] = acc;
        }
      }
      if (db) {
        double s = 0;
        for (int64_t i = 0; i < HW; ++i) s += gp[i];
        part[(b * C + c) * 10 + 9] = s;
      }
    }
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < 10; ++t) {
      if ((t < 9 && !dw) || (t == 9 && !db)) continue;
      double s = 0;
      for (int64_t b = 0; b < B; ++b) s += part[(b * C + c) * 10 + t];
      if (t < 9) dw[c * 9 + t] = static_cast<T>(s);
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

void depthwise3x3_forward(DType dtype, void* out, const void* x, const void* weight, const void* bias, int64_t B,
                          int64_t C, int64_t H, int64_t W) {
  VT_DISPATCH_FLOAT(dtype, "depthwise_conv3x3", [&] {
    dw_forward_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(weight),
                    static_cast<const scalar_t*>(bias), B, C, H, W);
  });
}

void depthwise3x3_backward(DType dtype, void* dx, void* dweight, void* dbias, const void* g, const void* x,
                           const void* weight, int64_t B, int64_t C, int64_t H, int64_t W) {
  VT_DISPATCH_FLOAT(dtype, "depthwise_conv3x3", [&] {
    dw_backward_impl(static_cast<scalar_t*>(dx), static_cast<scalar_t*>(dweight), static_cast<scalar_t*>(dbias),
                     static_cast<const scalar_t*>(g), static_cast<const scalar_t*>(x),
                     static_cast<const scalar_t*>(weight), B, C, H, W);
  });
}

}  // namespace vt::kernels::cpu
