// Pillow's resampling (Resample.c) re-implemented for 8-bit images, so eval transforms match torchvision on
// PIL images bit for bit: separable filters whose support widens by the scale when down-sizing (antialias),
// horizontal pass first, an 8-bit clipped intermediate, 22-bit fixed-point coefficients.
#pragma once
#include <opencv2/core.hpp>

namespace vt::data {

enum class PilFilter { bilinear, bicubic };

/// Resizes a CV_8UC1/CV_8UC3 image (any ROI) to out_width x out_height as PIL's Image.resize does.
cv::Mat pil_resize(const cv::Mat& src, int out_width, int out_height, PilFilter filter = PilFilter::bicubic);

}  // namespace vt::data
