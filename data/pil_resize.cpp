#include "data/pil_resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace vt::data {
namespace {

constexpr int kPrecisionBits = kPilPrecisionBits;

inline uint8_t clip8(int v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// CH is a template parameter so the per-channel loop unrolls (most of a training resize is spent here).
template <int CH>
void horizontal_rows(const cv::Mat& src, cv::Mat& out, int row0, const PilCoefficients& c) {
  for (int y = 0; y < out.rows; ++y) {
    const uint8_t* in = src.ptr<uint8_t>(row0 + y);
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int xx = 0; xx < out.cols; ++xx) {
      const int xmin = c.bounds[2 * xx], xmax = c.bounds[2 * xx + 1];
      const int* k = &c.weights[static_cast<size_t>(xx) * c.taps];
      int ss[CH];
      for (int ci = 0; ci < CH; ++ci) ss[ci] = 1 << (kPrecisionBits - 1);
      const uint8_t* p = in + xmin * CH;
      for (int x = 0; x < xmax; ++x, p += CH)
        for (int ci = 0; ci < CH; ++ci) ss[ci] += p[ci] * k[x];
      for (int ci = 0; ci < CH; ++ci) o[xx * CH + ci] = clip8(ss[ci]);
    }
  }
}

cv::Mat horizontal(const cv::Mat& src, int out_w, int row0, int rows, const PilCoefficients& c) {
  const int ch = src.channels();
  cv::Mat out(rows, out_w, src.type());
  if (ch == 3) {
    horizontal_rows<3>(src, out, row0, c);
    return out;
  }
  for (int y = 0; y < rows; ++y) {
    const uint8_t* in = src.ptr<uint8_t>(row0 + y);
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int xx = 0; xx < out_w; ++xx) {
      const int xmin = c.bounds[2 * xx], xmax = c.bounds[2 * xx + 1];
      const int* k = &c.weights[static_cast<size_t>(xx) * c.taps];
      for (int ci = 0; ci < ch; ++ci) {
        int ss = 1 << (kPrecisionBits - 1);
        for (int x = 0; x < xmax; ++x) ss += in[(x + xmin) * ch + ci] * k[x];
        o[xx * ch + ci] = clip8(ss);
      }
    }
  }
  return out;
}

cv::Mat vertical(const cv::Mat& src, int out_h, int row_shift, const PilCoefficients& c) {
  const int ch = src.channels(), width = src.cols * ch;
  cv::Mat out(out_h, src.cols, src.type());
  std::vector<int> acc(width);
  for (int yy = 0; yy < out_h; ++yy) {
    const int ymin = c.bounds[2 * yy] - row_shift, ymax = c.bounds[2 * yy + 1];
    const int* k = &c.weights[static_cast<size_t>(yy) * c.taps];
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (int y = 0; y < ymax; ++y) {
      const uint8_t* in = src.ptr<uint8_t>(ymin + y);
      const int w = k[y];
      for (int x = 0; x < width; ++x) acc[x] += in[x] * w;
    }
    uint8_t* o = out.ptr<uint8_t>(yy);
    for (int x = 0; x < width; ++x) o[x] = clip8(acc[x]);
  }
  return out;
}

}  // namespace

static double bicubic(double x) {
  constexpr double a = -0.5;  // PIL's choice (OpenCV's INTER_CUBIC uses -0.75)
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

static double bilinear(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

PilKernel pil_kernel(PilFilter filter) { return filter == PilFilter::bicubic ? bicubic : bilinear; }

double pil_support(PilFilter filter) { return filter == PilFilter::bicubic ? 2.0 : 1.0; }

// precompute_coeffs + normalize_coeffs_8bpc of Pillow, for the box [0, in_size).
PilCoefficients pil_coefficients(int in_size, int out_size, PilFilter filter) {
  const double support_1 = pil_support(filter);
  const PilKernel fn = pil_kernel(filter);
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support_1 * filterscale;
  PilCoefficients c;
  c.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(2 * out_size);
  c.weights.assign(static_cast<size_t>(out_size) * c.taps, 0);
  std::vector<double> w(c.taps);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = fn((x + xmin - center + 0.5) * ss);
      ww += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? w[x] / ww : w[x];
      c.weights[static_cast<size_t>(xx) * c.taps + x] =
          static_cast<int>(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    c.bounds[2 * xx] = xmin;
    c.bounds[2 * xx + 1] = xmax;
  }
  return c;
}

cv::Mat pil_resize(const cv::Mat& src, int out_width, int out_height, PilFilter filter) {
  VT_CHECK(src.depth() == CV_8U && (src.channels() == 1 || src.channels() == 3),
           "[data] pil_resize needs an 8-bit 1- or 3-channel image");
  VT_CHECK(out_width > 0 && out_height > 0 && !src.empty(), "[data] pil_resize: bad size ", out_width, "x", out_height,
           " from ", src.cols, "x", src.rows);
  if (out_width == src.cols && out_height == src.rows) return src.clone();
  const bool need_h = out_width != src.cols, need_v = out_height != src.rows;
  const PilCoefficients cv_ = pil_coefficients(src.rows, out_height, filter);
  // Like Pillow, the horizontal pass only covers the rows the vertical pass will read.
  const int row0 = need_v ? cv_.bounds[0] : 0;
  const int row1 = need_v ? cv_.bounds[2 * out_height - 2] + cv_.bounds[2 * out_height - 1] : src.rows;
  cv::Mat mid = src;
  int shift = 0;
  if (need_h) {
    mid = horizontal(src, out_width, row0, row1 - row0, pil_coefficients(src.cols, out_width, filter));
    shift = row0;
  }
  if (!need_v) return mid.isContinuous() && need_h ? mid : mid.clone();
  return vertical(mid, out_height, shift, cv_);
}

}  // namespace vt::data
