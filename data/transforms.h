// Classification transforms with timm/torchvision semantics on 8-bit RGB cv::Mat, and the tensor-side steps
// (normalize into CHW f32, random erasing). Random choices come from a SampleRng.
#pragma once
#include <array>
#include <opencv2/core.hpp>

#include "data/fast_resize.h"
#include "data/pil_resize.h"
#include "data/sample_rng.h"

namespace vt::data {

struct CropBox {
  int x = 0, y = 0, width = 0, height = 0;
};

struct RandomResizedCropParams {
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
};

/// torchvision RandomResizedCrop.get_params: 10 tries of (area, log-uniform aspect), then the central
/// fallback clamped to the ratio range.
CropBox random_resized_crop_box(int width, int height, SampleRng& rng, const RandomResizedCropParams& p = {});

/// Crops `box` (in src's coordinates) and resizes it to size x size with Pillow's filter.
cv::Mat crop_and_resize(const cv::Mat& src, const CropBox& box, int size, PilFilter filter = PilFilter::bicubic);

/// crop_and_resize through fast_resize: the training path (within ±2 of Pillow per value, about 2x faster).
cv::Mat crop_and_fast_resize(const cv::Mat& src, const CropBox& box, int size, PilFilter filter = PilFilter::bicubic);

/// Horizontal flip (a new image).
cv::Mat hflip(const cv::Mat& src);

/// torchvision Resize(int): short side to `short_side`, long side int(short_side * long / short).
cv::Mat resize_short_side(const cv::Mat& src, int short_side, PilFilter filter = PilFilter::bicubic);

/// torchvision CenterCrop: offsets int(round((H - size) / 2)) with Python's round-half-even; the result is a view.
cv::Mat center_crop(const cv::Mat& src, int size);

/// timm's eval transform: resize short side to floor(size / crop_pct), center crop `size`.
cv::Mat eval_resize_crop(const cv::Mat& src, int size, double crop_pct, PilFilter filter = PilFilter::bicubic);

struct Normalization {
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // ImageNet
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

/// ToTensor + Normalize: u8 RGB HxW (or gray, mean[0]/std[0]) to f32 CHW at `out`, (v/255 - mean)/std in f32.
void to_normalized_chw(const cv::Mat& src, const Normalization& norm, float* out);

struct RandomErasingParams {
  double probability = 0.25;
  double min_area = 0.02, max_area = 1.0 / 3.0;
  double min_aspect = 0.3;  // max = 1/min_aspect
};

/// One sample's RandomErasing choice: the box (width 0: nothing erased) and the seed of its N(0,1) values.
struct ErasingDraw {
  CropBox box;
  uint64_t noise_seed = 0;
};

/// timm RandomErasing, mode "pixel", count 1: with the given probability, up to 10 tries for a box of area
/// fraction U(min,max) and log-uniform aspect inside height x width.
ErasingDraw draw_random_erasing(int height, int width, SampleRng& rng, const RandomErasingParams& p = {});

/// Fills the drawn box of every channel of a normalized CHW image with N(0,1) values: value e of the box
/// (channel-major, then rows) is rng::normal_at(noise_seed, 0, e), so the device kernel writes the same values.
void fill_erasing(float* chw, int channels, int height, int width, const ErasingDraw& d);

/// draw_random_erasing + fill_erasing; returns the box erased (width 0 when none).
CropBox random_erase(float* chw, int channels, int height, int width, SampleRng& rng,
                     const RandomErasingParams& p = {});

}  // namespace vt::data
