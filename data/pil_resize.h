// Pillow's resampling (Resample.c) re-implemented for 8-bit images, so eval transforms match torchvision on
// PIL images bit for bit: separable filters whose support widens by the scale when down-sizing (antialias),
// horizontal pass first, an 8-bit clipped intermediate, 22-bit fixed-point coefficients.
#pragma once
#include <opencv2/core.hpp>

#include <vector>

namespace vt::data {

enum class PilFilter { bilinear, bicubic };

/// Pillow's filter kernel (bicubic with a = -0.5, or the triangle) and its support radius at scale 1; shared by
/// the exact port and the fast training resize (data/fast_resize).
using PilKernel = double (*)(double);
PilKernel pil_kernel(PilFilter filter);
double pil_support(PilFilter filter);

/// Pillow's fixed-point weights: 22 fraction bits (precompute_coeffs + normalize_coeffs_8bpc).
constexpr int kPilPrecisionBits = 32 - 8 - 2;

/// One axis of a resize: output o reads inputs bounds[2o] .. bounds[2o] + bounds[2o + 1] - 1 with the weights
/// weights[o · taps ..], zero past the count.
struct PilCoefficients {
  int taps = 0;
  std::vector<int> bounds;   // per output: first input index, count
  std::vector<int> weights;  // per output: `taps` fixed-point weights
};

/// Pillow's coefficients for resizing the box [0, in_size) to out_size (the same numbers on every machine: the
/// kernels run in double precision with no fused multiply-adds). The device resize (data/crop_resize) uses them.
PilCoefficients pil_coefficients(int in_size, int out_size, PilFilter filter);

/// Resizes a CV_8UC1/CV_8UC3 image (any ROI) to out_width x out_height as PIL's Image.resize does.
cv::Mat pil_resize(const cv::Mat& src, int out_width, int out_height, PilFilter filter = PilFilter::bicubic);

}  // namespace vt::data
