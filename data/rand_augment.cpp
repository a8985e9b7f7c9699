#include "data/rand_augment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <opencv2/imgproc.hpp>
#include <cctype>
#include <sstream>

#include "core/error.h"

namespace vt::data {
namespace {

constexpr double kLevelDenom = 10.0;

bool signed_op(AugOp op) {
  switch (op) {
    case AugOp::rotate:
    case AugOp::shear_x:
    case AugOp::shear_y:
    case AugOp::translate_x_rel:
    case AugOp::translate_y_rel: return true;
    case AugOp::color:
    case AugOp::contrast:
    case AugOp::brightness:
    case AugOp::sharpness: return true;
    default: return false;
  }
}

cv::Mat apply_lut(const cv::Mat& src, const std::array<std::array<uint8_t, 256>, 3>& lut) {
  cv::Mat out(src.size(), src.type());
  const int C = src.channels();
  for (int y = 0; y < src.rows; ++y) {
    const uint8_t* s = src.ptr<uint8_t>(y);
    uint8_t* d = out.ptr<uint8_t>(y);
    for (int x = 0; x < src.cols; ++x, s += C, d += C)
      for (int c = 0; c < C; ++c) d[c] = lut[c][s[c]];
  }
  return out;
}

std::array<std::array<uint8_t, 256>, 3> same_lut(uint8_t (*f)(int, double), double arg) {
  std::array<std::array<uint8_t, 256>, 3> lut{};
  for (int i = 0; i < 256; ++i) lut[0][i] = lut[1][i] = lut[2][i] = f(i, arg);
  return lut;
}

std::array<std::array<int64_t, 256>, 3> histograms(const cv::Mat& src) {
  std::array<std::array<int64_t, 256>, 3> h{};
  const int C = src.channels();
  for (int y = 0; y < src.rows; ++y) {
    const uint8_t* s = src.ptr<uint8_t>(y);
    for (int x = 0; x < src.cols; ++x, s += C)
      for (int c = 0; c < C; ++c) ++h[c][s[c]];
  }
  return h;
}

// ImageOps.autocontrast(cutoff=0), per band.
cv::Mat auto_contrast(const cv::Mat& src) {
  const auto h = histograms(src);
  std::array<std::array<uint8_t, 256>, 3> lut{};
  for (int c = 0; c < 3; ++c) {
    int lo = 0, hi = 255;
    while (lo < 256 && h[c][lo] == 0) ++lo;
    while (hi >= 0 && h[c][hi] == 0) --hi;
    for (int i = 0; i < 256; ++i) {
      if (hi <= lo) {
        lut[c][i] = static_cast<uint8_t>(i);
        continue;
      }
      const double scale = 255.0 / (hi - lo), offset = -lo * scale;
      const int v = static_cast<int>(i * scale + offset);  // Python int(): toward zero
      lut[c][i] = static_cast<uint8_t>(std::clamp(v, 0, 255));
    }
  }
  return apply_lut(src, lut);
}

// ImageOps.equalize, per band.
cv::Mat equalize(const cv::Mat& src) {
  const auto h = histograms(src);
  std::array<std::array<uint8_t, 256>, 3> lut{};
  for (int c = 0; c < 3; ++c) {
    int64_t total = 0, last = 0, nonzero = 0;
    for (int i = 0; i < 256; ++i)
      if (h[c][i]) {
        total += h[c][i];
        last = h[c][i];
        ++nonzero;
      }
    const int64_t step = nonzero <= 1 ? 0 : (total - last) / 255;
    int64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      lut[c][i] = step == 0 ? static_cast<uint8_t>(i) : static_cast<uint8_t>(std::min<int64_t>(255, n / step));
      n += h[c][i];
    }
  }
  return apply_lut(src, lut);
}

// Image.blend(degenerate, img, factor) as Pillow's ImagingBlend: float math, truncation, clipping.
cv::Mat blend(const cv::Mat& degenerate, const cv::Mat& img, double factor) {
  const float alpha = static_cast<float>(factor);
  cv::Mat out(img.size(), img.type());
  const int n = img.cols * img.channels();
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* __restrict a = degenerate.ptr<uint8_t>(y);
    const uint8_t* __restrict b = img.ptr<uint8_t>(y);
    uint8_t* __restrict d = out.ptr<uint8_t>(y);
    // Clipping by min/max then truncating equals Pillow's branches, and vectorizes (a hot loop of ColorJitter).
    for (int x = 0; x < n; ++x) {
      const float t = static_cast<float>(a[x]) + alpha * static_cast<float>(static_cast<int>(b[x]) - a[x]);
      d[x] = static_cast<uint8_t>(static_cast<int>(std::min(std::max(t, 0.0f), 255.0f)));
    }
  }
  return out;
}

// convert("L"): ITU-R 601-2 luma in Pillow's fixed point.
cv::Mat luma(const cv::Mat& rgb) {
  cv::Mat l(rgb.size(), CV_8UC1);
  for (int y = 0; y < rgb.rows; ++y) {
    const uint8_t* s = rgb.ptr<uint8_t>(y);
    uint8_t* d = l.ptr<uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x, s += 3)
      d[x] = static_cast<uint8_t>((s[0] * 19595 + s[1] * 38470 + s[2] * 7471 + 0x8000) >> 16);
  }
  return l;
}

// ImageFilter.SMOOTH (3x3 kernel 1 1 1 / 1 5 1 / 1 1 1, /13); Pillow leaves the border pixels unchanged.
cv::Mat smooth(const cv::Mat& src) {
  cv::Mat out = src.clone();
  const int C = src.channels();
  for (int y = 1; y + 1 < src.rows; ++y) {
    const uint8_t* r0 = src.ptr<uint8_t>(y - 1);
    const uint8_t* r1 = src.ptr<uint8_t>(y);
    const uint8_t* r2 = src.ptr<uint8_t>(y + 1);
    uint8_t* d = out.ptr<uint8_t>(y);
    for (int x = 1; x + 1 < src.cols; ++x)
      for (int c = 0; c < C; ++c) {
        const int i = x * C + c;
        const int sum =
            r0[i - C] + r0[i] + r0[i + C] + r1[i - C] + 5 * r1[i] + r1[i + C] + r2[i - C] + r2[i] + r2[i + C];
        d[i] = static_cast<uint8_t>(std::min(255.0, sum / 13.0 + 0.5));
      }
  }
  return out;
}

// An affine warp whose matrix maps output pixel centres to input ones, with the timm fill colour.
cv::Mat warp(const cv::Mat& src, const cv::Matx23d& out_to_in, const RandAugmentConfig& cfg) {
  cv::Mat out;
  cv::warpAffine(src, out, cv::Mat(out_to_in), src.size(), cv::INTER_CUBIC | cv::WARP_INVERSE_MAP, cv::BORDER_CONSTANT,
                 cv::Scalar(cfg.fill[0], cfg.fill[1], cfg.fill[2]));
  return out;
}

AugOp op_at(int i) { return static_cast<AugOp>(i); }

}  // namespace

RandAugmentConfig parse_rand_augment(const std::string& spec) {
  std::istringstream in(spec);
  std::string part;
  std::getline(in, part, '-');
  VT_CHECK(part == "rand", "[data] RandAugment config '", spec, "' must start with 'rand'");
  RandAugmentConfig cfg;  // timm's defaults for keys the string leaves out
  cfg.magnitude = kLevelDenom;
  cfg.magnitude_std = 0;
  cfg.increasing = false;
  while (std::getline(in, part, '-')) {
    size_t k = 0;
    while (k < part.size() && std::isalpha(static_cast<unsigned char>(part[k]))) ++k;
    const std::string key = part.substr(0, k), value = part.substr(k);
    double v = 0;
    try {
      size_t used = 0;
      v = std::stod(value, &used);
      VT_CHECK(used == value.size(), "");
    } catch (const std::exception&) {
      VT_FAIL("[data] RandAugment config '", spec, "': bad value in '", part, "'");
    }
    if (key == "m") cfg.magnitude = v;
    else if (key == "n") cfg.num_ops = static_cast<int>(v);
    else if (key == "mstd") cfg.magnitude_std = v > 100 ? std::numeric_limits<double>::infinity() : v;
    else if (key == "mmax") cfg.magnitude_max = v;
    else if (key == "p") cfg.prob = v;
    else if (key == "inc") cfg.increasing = v != 0;
    else VT_FAIL("[data] RandAugment config '", spec, "': unknown key '", key, "' (m, n, mstd, mmax, p, inc)");
  }
  return cfg;
}

double aug_op_argument(AugOp op, double m, bool negate, const RandAugmentConfig& cfg) {
  const double level = m / kLevelDenom, sign = negate ? -1.0 : 1.0;
  switch (op) {
    case AugOp::rotate: return sign * level * 30.0;
    case AugOp::shear_x:
    case AugOp::shear_y: return sign * level * 0.3;
    case AugOp::translate_x_rel:
    case AugOp::translate_y_rel: return sign * level * cfg.translate_pct;
    case AugOp::posterize: return cfg.increasing ? 4 - static_cast<int>(level * 4) : static_cast<int>(level * 4);
    case AugOp::solarize: return cfg.increasing ? 256 - static_cast<int>(level * 256) : static_cast<int>(level * 256);
    case AugOp::solarize_add: return static_cast<int>(level * 110);
    case AugOp::color:
    case AugOp::contrast:
    case AugOp::brightness:
    case AugOp::sharpness: return cfg.increasing ? 1.0 + sign * level * 0.9 : level * 1.8 + 0.1;
    default: return 0.0;
  }
}

cv::Mat apply_aug_op(const cv::Mat& rgb, AugOp op, double arg, const RandAugmentConfig& cfg) {
  VT_CHECK(rgb.type() == CV_8UC3, "[data] RandAugment needs an 8-bit RGB image");
  const double w = rgb.cols, h = rgb.rows;
  switch (op) {
    case AugOp::auto_contrast: return auto_contrast(rgb);
    case AugOp::equalize: return equalize(rgb);
    case AugOp::invert: return apply_lut(rgb, same_lut([](int i, double) { return static_cast<uint8_t>(255 - i); }, 0));
    case AugOp::posterize:
      if (arg >= 8) return rgb.clone();
      return apply_lut(rgb, same_lut(
                                [](int i, double bits) {
                                  const int mask = ~((1 << (8 - static_cast<int>(bits))) - 1);
                                  return static_cast<uint8_t>(i & mask);
                                },
                                arg));
    case AugOp::solarize:
      return apply_lut(rgb, same_lut([](int i, double t) { return static_cast<uint8_t>(i < t ? i : 255 - i); }, arg));
    case AugOp::solarize_add:
      return apply_lut(rgb, same_lut(
                                [](int i, double add) {
                                  return static_cast<uint8_t>(i < 128 ? std::min(255, i + static_cast<int>(add)) : i);
                                },
                                arg));
    case AugOp::color: {
      cv::Mat gray3;
      cv::cvtColor(luma(rgb), gray3, cv::COLOR_GRAY2RGB);
      return blend(gray3, rgb, arg);
    }
    case AugOp::contrast: {
      const cv::Mat l = luma(rgb);
      const int mean = static_cast<int>(cv::mean(l)[0] + 0.5);
      return blend(cv::Mat(rgb.size(), rgb.type(), cv::Scalar(mean, mean, mean)), rgb, arg);
    }
    case AugOp::brightness: return blend(cv::Mat::zeros(rgb.size(), rgb.type()), rgb, arg);
    case AugOp::sharpness: return blend(smooth(rgb), rgb, arg);
    case AugOp::rotate: {
      // Pillow rotates counter-clockwise about (w/2, h/2) in pixel-edge coordinates.
      const double a = arg * CV_PI / 180.0, c = std::cos(a), s = std::sin(a);
      const double cx = w / 2.0 - 0.5, cy = h / 2.0 - 0.5;
      return warp(rgb, cv::Matx23d(c, -s, cx - c * cx + s * cy, s, c, cy - s * cx - c * cy), cfg);
    }
    // Pillow's affine data (a, b, c, d, e, f) maps output (x+.5, y+.5) to input; shifted to pixel centres here.
    case AugOp::shear_x: return warp(rgb, cv::Matx23d(1, arg, 0.5 * arg, 0, 1, 0), cfg);
    case AugOp::shear_y: return warp(rgb, cv::Matx23d(1, 0, 0, arg, 1, 0.5 * arg), cfg);
    case AugOp::translate_x_rel: return warp(rgb, cv::Matx23d(1, 0, arg * w, 0, 1, 0), cfg);
    case AugOp::translate_y_rel: return warp(rgb, cv::Matx23d(1, 0, 0, 0, 1, arg * h), cfg);
  }
  VT_FAIL("[data] unknown RandAugment op");
}

AugDraw draw_rand_augment(const RandAugmentConfig& cfg, SampleRng& rng) {
  AugDraw draw;
  for (int k = 0; k < cfg.num_ops; ++k) {
    const AugOp op = op_at(static_cast<int>(rng.randint(0, kAugOpCount - 1)));
    if (cfg.prob < 1.0 && rng.uniform() > cfg.prob) continue;
    double m = cfg.magnitude;
    if (std::isinf(cfg.magnitude_std)) m = rng.uniform(0, m);
    else if (cfg.magnitude_std > 0) m = m + cfg.magnitude_std * rng.normal();
    m = std::clamp(m, 0.0, cfg.magnitude_max);
    const bool negate = signed_op(op) && rng.uniform() > 0.5;
    draw.steps.push_back({op, aug_op_argument(op, m, negate, cfg)});
  }
  return draw;
}

AugDraw draw_color_jitter(double brightness, double contrast, double saturation, SampleRng& rng) {
  const AugOp ops[3] = {AugOp::brightness, AugOp::contrast, AugOp::color};
  const double strength[3] = {brightness, contrast, saturation};
  int order[3] = {0, 1, 2};
  for (int i = 2; i > 0; --i) std::swap(order[i], order[rng.randint(0, i)]);
  double factor[3];
  for (int i = 0; i < 3; ++i) factor[i] = rng.uniform(std::max(0.0, 1.0 - strength[i]), 1.0 + strength[i]);
  AugDraw draw;
  for (int k : order)
    if (strength[k] > 0) draw.steps.push_back({ops[k], factor[k]});
  return draw;
}

cv::Mat apply_aug_draw(const cv::Mat& rgb, const AugDraw& draw, const RandAugmentConfig& cfg) {
  cv::Mat img = rgb;
  for (const AugStep& s : draw.steps) img = apply_aug_op(img, s.op, s.argument, cfg);
  return img.data == rgb.data ? rgb.clone() : img;
}

cv::Mat rand_augment(const cv::Mat& rgb, const RandAugmentConfig& cfg, SampleRng& rng) {
  return apply_aug_draw(rgb, draw_rand_augment(cfg, rng), cfg);
}

cv::Mat color_jitter(const cv::Mat& rgb, double brightness, double contrast, double saturation, SampleRng& rng) {
  return apply_aug_draw(rgb, draw_color_jitter(brightness, contrast, saturation, rng), RandAugmentConfig{});
}

}  // namespace vt::data
