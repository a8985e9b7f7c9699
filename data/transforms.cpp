#include "data/transforms.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace vt::data {

CropBox random_resized_crop_box(int width, int height, SampleRng& rng, const RandomResizedCropParams& p) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(p.ratio_min), log_hi = std::log(p.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(p.scale_min, p.scale_max);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    // Python's round() is half-to-even, as is nearbyint in the default rounding mode.
    const int w = static_cast<int>(std::nearbyint(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::nearbyint(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int y = static_cast<int>(rng.randint(0, height - h));
      const int x = static_cast<int>(rng.randint(0, width - w));
      return {x, y, w, h};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < p.ratio_min) {
    h = static_cast<int>(std::nearbyint(w / p.ratio_min));
  } else if (in_ratio > p.ratio_max) {
    w = static_cast<int>(std::nearbyint(h * p.ratio_max));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

namespace {
cv::Mat checked_crop(const cv::Mat& src, const CropBox& box) {
  VT_CHECK(box.x >= 0 && box.y >= 0 && box.width > 0 && box.height > 0 && box.x + box.width <= src.cols &&
               box.y + box.height <= src.rows,
           "[data] crop box out of the image");
  return src(cv::Rect(box.x, box.y, box.width, box.height));
}
}  // namespace

cv::Mat crop_and_resize(const cv::Mat& src, const CropBox& box, int size, PilFilter filter) {
  return pil_resize(checked_crop(src, box), size, size, filter);
}

cv::Mat crop_and_fast_resize(const cv::Mat& src, const CropBox& box, int size, PilFilter filter) {
  return fast_resize(checked_crop(src, box), size, size, filter);
}

cv::Mat hflip(const cv::Mat& src) {
  cv::Mat out;
  cv::flip(src, out, 1);
  return out;
}

cv::Mat resize_short_side(const cv::Mat& src, int short_side, PilFilter filter) {
  const int w = src.cols, h = src.rows;
  if (w <= h) {
    const int nh = static_cast<int>(static_cast<int64_t>(short_side) * h / w);
    return (w == short_side && h == nh) ? src : pil_resize(src, short_side, nh, filter);
  }
  const int nw = static_cast<int>(static_cast<int64_t>(short_side) * w / h);
  return (h == short_side && w == nw) ? src : pil_resize(src, nw, short_side, filter);
}

cv::Mat center_crop(const cv::Mat& src, int size) {
  VT_CHECK(src.cols >= size && src.rows >= size, "[data] center_crop ", size, " of a ", src.cols, "x", src.rows,
           " image");
  const int top = static_cast<int>(std::nearbyint((src.rows - size) / 2.0));
  const int left = static_cast<int>(std::nearbyint((src.cols - size) / 2.0));
  return src(cv::Rect(left, top, size, size));
}

cv::Mat eval_resize_crop(const cv::Mat& src, int size, double crop_pct, PilFilter filter) {
  const int scale_size = static_cast<int>(std::floor(size / crop_pct));
  return center_crop(resize_short_side(src, scale_size, filter), size);
}

void to_normalized_chw(const cv::Mat& src, const Normalization& norm, float* out) {
  VT_CHECK(src.depth() == CV_8U, "[data] to_normalized_chw needs an 8-bit image");
  const int C = src.channels(), H = src.rows, W = src.cols;
  VT_CHECK(C <= 3, "[data] to_normalized_chw: ", C, " channels");
  // 256 values per channel, each computed as torchvision does (f32 divide, subtract, divide): a table lookup.
  float table[3][256];
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < 256; ++v) table[c][v] = (static_cast<float>(v) / 255.0f - norm.mean[c]) / norm.std[c];
  const int64_t plane = static_cast<int64_t>(H) * W;
  // Channel-outer, so each output row is written contiguously.
  for (int y = 0; y < H; ++y) {
    const uint8_t* row = src.ptr<uint8_t>(y);
    for (int c = 0; c < C; ++c) {
      float* dst = out + c * plane + static_cast<int64_t>(y) * W;
      const float* lut = table[c];
      const uint8_t* p = row + c;
      for (int x = 0; x < W; ++x) dst[x] = lut[p[x * C]];
    }
  }
}

ErasingDraw draw_random_erasing(int height, int width, SampleRng& rng, const RandomErasingParams& p) {
  if (rng.uniform() > p.probability) return {};
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(p.min_aspect), log_hi = std::log(1.0 / p.min_aspect);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = rng.uniform(p.min_area, p.max_area) * area;
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int h = static_cast<int>(std::nearbyint(std::sqrt(target * aspect)));
    const int w = static_cast<int>(std::nearbyint(std::sqrt(target / aspect)));
    if (w < width && h < height) {
      const int top = static_cast<int>(rng.randint(0, height - h));
      const int left = static_cast<int>(rng.randint(0, width - w));
      return {{left, top, w, h}, rng.bits()};
    }
  }
  return {};
}

void fill_erasing(float* chw, int channels, int height, int width, const ErasingDraw& d) {
  const CropBox& b = d.box;
  uint64_t e = 0;
  for (int c = 0; c < channels; ++c)
    for (int y = b.y; y < b.y + b.height; ++y)
      for (int x = b.x; x < b.x + b.width; ++x)
        chw[(static_cast<int64_t>(c) * height + y) * width + x] = rng::normal_at(d.noise_seed, 0, e++);
}

CropBox random_erase(float* chw, int channels, int height, int width, SampleRng& rng, const RandomErasingParams& p) {
  const ErasingDraw d = draw_random_erasing(height, width, rng, p);
  fill_erasing(chw, channels, height, width, d);
  return d.box;
}

}  // namespace vt::data
