// timm's RandAugment (auto_augment.py: rand_augment_transform) on 8-bit RGB images: `num_ops` ops drawn
// uniformly with replacement, each applied with probability `prob` at magnitude N(m, mstd) clipped to
// [0, mmax]. Pixel ops follow Pillow's ImageOps/ImageEnhance arithmetic; the geometric ops use OpenCV's
// bicubic warp (a = -0.75, Pillow uses -0.5) with the same geometry and fill.
#pragma once
#include <array>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "data/sample_rng.h"

namespace vt::data {

enum class AugOp {
  auto_contrast,
  equalize,
  invert,
  rotate,
  posterize,
  solarize,
  solarize_add,
  color,
  contrast,
  brightness,
  sharpness,
  shear_x,
  shear_y,
  translate_x_rel,
  translate_y_rel
};
inline constexpr int kAugOpCount = 15;

/// Defaults are DeiT's rand-m9-mstd0.5-inc1.
struct RandAugmentConfig {
  int num_ops = 2;
  double magnitude = 9, magnitude_std = 0.5, magnitude_max = 10, prob = 0.5;
  bool increasing = true;                      // timm's "inc1" op variants (stronger with magnitude)
  std::array<uint8_t, 3> fill{124, 116, 104};  // round(255 * ImageNet mean), as timm's img_mean
  double translate_pct = 0.45;
};

/// Parses timm's config string, e.g. "rand-m9-mstd0.5-inc1" (keys m, n, mstd, mmax, p, inc; missing keys take
/// timm's defaults m10, n2, mstd0, inc0, p0.5); throws on others.
RandAugmentConfig parse_rand_augment(const std::string& spec);

/// The op's argument at `magnitude` as timm's level functions give it (angle in degrees, enhance factor, bits,
/// threshold, shear factor, translate fraction...), with the sign of signed ops flipped when `negate`.
double aug_op_argument(AugOp op, double magnitude, bool negate, const RandAugmentConfig& cfg);

/// Applies one op with an already resolved argument (see aug_op_argument).
cv::Mat apply_aug_op(const cv::Mat& rgb, AugOp op, double argument, const RandAugmentConfig& cfg);

/// One image's drawn pixel ops, in the order they apply: what RandAugment or ColorJitter chose, as data, so that
/// any implementation of the ops (this file's, or a device one) applies the same choices from the same stream.
struct AugStep {
  AugOp op;
  double argument;  // resolved, as apply_aug_op takes it
};
struct AugDraw {
  std::vector<AugStep> steps;
};

/// RandAugment's choices for one image; they do not depend on its pixels.
AugDraw draw_rand_augment(const RandAugmentConfig& cfg, SampleRng& rng);

/// torchvision ColorJitter(brightness, contrast, saturation) as timm builds it when RandAugment is off: factors
/// U(max(0, 1-s), 1+s), applied in a random order (a strength of 0 skips that op).
AugDraw draw_color_jitter(double brightness, double contrast, double saturation, SampleRng& rng);

/// The drawn ops one after another (a copy of rgb when there are none).
cv::Mat apply_aug_draw(const cv::Mat& rgb, const AugDraw& draw, const RandAugmentConfig& cfg);

/// draw_rand_augment, then apply_aug_draw.
cv::Mat rand_augment(const cv::Mat& rgb, const RandAugmentConfig& cfg, SampleRng& rng);

/// draw_color_jitter, then apply_aug_draw.
cv::Mat color_jitter(const cv::Mat& rgb, double brightness, double contrast, double saturation, SampleRng& rng);

}  // namespace vt::data
