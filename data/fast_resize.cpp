#include "data/fast_resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define VT_DATA_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VT_DATA_SIMD_CLONES
#endif

namespace vt::data {
namespace {

// Pillow's per-output windows, re-based so every output has the same number of taps (zero-padded weights):
// the inner loops then have one fixed trip count.
struct Taps {
  int count = 0;
  std::vector<int> first;     // per output: first input index
  std::vector<float> weight;  // per output: `count` weights
};

Taps make_taps(int in_size, int out_size, PilFilter filter) {
  const double support_1 = pil_support(filter);
  const PilKernel fn = pil_kernel(filter);
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support_1 * filterscale;
  Taps t;
  t.count = std::min(in_size, static_cast<int>(std::ceil(support)) * 2 + 1);
  t.first.resize(out_size);
  t.weight.assign(static_cast<size_t>(out_size) * t.count, 0.0f);
  std::vector<double> w(static_cast<size_t>(std::ceil(support)) * 2 + 1);
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(0, static_cast<int>(center - support + 0.5));
    const int hi = std::min(in_size, static_cast<int>(center + support + 0.5));
    double total = 0.0;
    for (int i = lo; i < hi; ++i) total += w[i - lo] = fn((i - center + 0.5) / filterscale);
    const int first = std::min(lo, in_size - t.count);
    t.first[o] = first;
    for (int i = lo; i < hi; ++i)
      t.weight[static_cast<size_t>(o) * t.count + (i - first)] =
          static_cast<float>(total != 0.0 ? w[i - lo] / total : w[i - lo]);
  }
  return t;
}

// acc[0..n) = sum_j weight[j] * rows[j][0..n). __restrict: uint8_t may alias float, which would stop vectorizing.
VT_DATA_SIMD_CLONES
void weighted_rows(const uint8_t* const* rows, const float* weight, int taps, int n, float* __restrict acc) {
  for (int i = 0; i < n; ++i) acc[i] = 0.0f;
  for (int j = 0; j < taps; ++j) {
    const uint8_t* __restrict r = rows[j];
    const float w = weight[j];
    if (w == 0.0f) continue;
    for (int i = 0; i < n; ++i) acc[i] += static_cast<float>(r[i]) * w;
  }
}

// Rounded and clipped to 8 bits; min/max rather than std::clamp so it compiles without branches and vectorizes.
VT_DATA_SIMD_CLONES
void round_to_u8(const float* __restrict acc, int n, uint8_t* __restrict out) {
  for (int i = 0; i < n; ++i)
    out[i] = static_cast<uint8_t>(static_cast<int>(std::min(std::max(acc[i] + 0.5f, 0.0f), 255.0f)));
}

// dst[x * dst_step + c] = line[x * C + c]: one transposed row. C is a template parameter so the copy unrolls.
template <int C>
void scatter(const uint8_t* line, int n, uint8_t* dst, size_t dst_step) {
  for (int x = 0; x < n; ++x, dst += dst_step)
    for (int c = 0; c < C; ++c) dst[c] = line[x * C + c];
}

void scatter(const uint8_t* line, int n, int channels, uint8_t* dst, size_t dst_step) {
  if (channels == 3) scatter<3>(line, n, dst, dst_step);
  else scatter<1>(line, n, dst, dst_step);
}

}  // namespace

cv::Mat fast_resize(const cv::Mat& src, int out_width, int out_height, PilFilter filter) {
  VT_CHECK(src.depth() == CV_8U && (src.channels() == 1 || src.channels() == 3),
           "[data] fast_resize needs an 8-bit 1- or 3-channel image");
  VT_CHECK(out_width > 0 && out_height > 0 && !src.empty(), "[data] fast_resize: bad size ", out_width, "x", out_height,
           " from ", src.cols, "x", src.rows);
  const int C = src.channels(), in_w = src.cols;
  const Taps tv = make_taps(src.rows, out_height, filter), th = make_taps(in_w, out_width, filter);
  // Vertical pass: output row yy over the full input width, stored transposed: column x of the input becomes row
  // x of `mid`, holding out_height * C values.
  cv::Mat mid(in_w, out_height * C, CV_8UC1);
  std::vector<const uint8_t*> rows(static_cast<size_t>(std::max(tv.count, th.count)));
  std::vector<float> acc(static_cast<size_t>(std::max(in_w, out_height)) * C);
  std::vector<uint8_t> line(acc.size());
  const size_t mid_step = mid.step[0];
  for (int yy = 0; yy < out_height; ++yy) {
    for (int j = 0; j < tv.count; ++j) rows[j] = src.ptr<uint8_t>(tv.first[yy] + j);
    weighted_rows(rows.data(), &tv.weight[static_cast<size_t>(yy) * tv.count], tv.count, in_w * C, acc.data());
    round_to_u8(acc.data(), in_w * C, line.data());
    scatter(line.data(), in_w, C, mid.data + static_cast<size_t>(yy) * C, mid_step);
  }
  // Horizontal pass, now also over contiguous rows of `mid`: output column xx for all output rows at once.
  cv::Mat out(out_height, out_width, src.type());
  const size_t out_step = out.step[0];
  for (int xx = 0; xx < out_width; ++xx) {
    for (int j = 0; j < th.count; ++j) rows[j] = mid.ptr<uint8_t>(th.first[xx] + j);
    weighted_rows(rows.data(), &th.weight[static_cast<size_t>(xx) * th.count], th.count, out_height * C, acc.data());
    round_to_u8(acc.data(), out_height * C, line.data());
    scatter(line.data(), out_height, C, out.data + static_cast<size_t>(xx) * C, out_step);
  }
  return out;
}

}  // namespace vt::data
