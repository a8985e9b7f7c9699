// Segmentation transforms with mmseg semantics (ADE20K recipe), applied to an RGB image and its label map
// together: RandomResize(scale (2048, 512), ratio 0.5-2, keep ratio), RandomCrop(cat_max_ratio 0.75),
// RandomFlip, PhotoMetricDistortion, normalize, pad (image 0, label 255); eval: resize to short side 512.
#pragma once
#include <opencv2/core.hpp>

#include "data/image_decode.h"
#include "data/sample_rng.h"
#include "data/transforms.h"

namespace vt::data {

inline constexpr uint8_t kIgnoreLabel = 255;

struct SegTrainConfig {
  int scale_long = 2048, scale_short = 512;
  double ratio_min = 0.5, ratio_max = 2.0;
  int crop = 512;
  double cat_max_ratio = 0.75;
  double flip = 0.5;
  bool photometric = true;
  /// An image or label map whose header declares more pixels is a bad file (data.max_image_pixels; 0: no limit).
  int64_t max_image_pixels = kDefaultMaxImagePixels;
};

/// mmcv.imrescale's size: the largest keep-ratio size within (long_side, short_side), rounded half up.
cv::Size rescale_size(cv::Size in, double long_side, double short_side);

/// The train pipeline up to (not including) normalize/pad. `image` CV_8UC3 RGB, `label` CV_8UC1; both change.
void seg_train_augment(cv::Mat& image, cv::Mat& label, const SegTrainConfig& cfg, SampleRng& rng);

/// mmseg RandomCrop: up to 10 tries for a box whose most frequent non-ignored class covers < cat_max_ratio.
cv::Rect seg_random_crop_box(const cv::Mat& label, int crop, double cat_max_ratio, SampleRng& rng);

/// mmseg PhotoMetricDistortion on RGB: brightness ±32, contrast 0.5-1.5 (before or after), saturation 0.5-1.5,
/// hue ±18 (OpenCV's 0..180 hue), each with probability 1/2.
void photometric_distortion(cv::Mat& image, SampleRng& rng);

/// Eval resize: the image to rescale_size(…, 2048, 512) bilinear; the label stays at full size (mmseg).
cv::Mat seg_eval_resize(const cv::Mat& image, int long_side = 2048, int short_side = 512);

/// Normalizes ((v − 255·mean) / (255·std) on 0-255 RGB; default ImageNet's = mmseg's 123.675/58.395, …) into CHW
/// floats of size crop x crop, padding with 0 bottom/right; writes the label (padded with 255) as int64
/// crop x crop. Larger inputs are an error.
void seg_to_tensors(const cv::Mat& image, const cv::Mat& label, int crop, float* image_out, int64_t* label_out,
                    const Normalization& norm = {});

}  // namespace vt::data
