// Pillow's resampling (Resample.c) re-implemented for 8-bit images, so eval transforms match torchvision on
// PIL images bit for bit: separable filters whose support widens by the scale when down-sizing (antialias),
// horizontal pass first, an 8-bit clipped intermediate, 22-bit fixed-point coefficients.
#pragma once
#include <opencv2/core.hpp>

namespace vt::data {

enum class PilFilter { bilinear, bicubic };

/// Pillow's filter kernel (bicubic with a = -0.5, or the triangle) and its support radius at scale 1; shared by
/// the exact port and the fast training resize (data/fast_resize).
using PilKernel = double (*)(double);
PilKernel pil_kernel(PilFilter filter);
double pil_support(PilFilter filter);

/// Resizes a CV_8UC1/CV_8UC3 image (any ROI) to out_width x out_height as PIL's Image.resize does.
cv::Mat pil_resize(const cv::Mat& src, int out_width, int out_height, PilFilter filter = PilFilter::bicubic);

}  // namespace vt::data
