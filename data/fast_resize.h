// A fast antialiased resize for training (no bit parity needed): Pillow's filters and support (bicubic a = -0.5,
// support widened by the scale when down-sizing) with float weights, vertical pass first into a transposed 8-bit
// intermediate so both passes run over contiguous memory and vectorize. Within ±2 of pil_resize per value.
#pragma once
#include <opencv2/core.hpp>

#include "data/pil_resize.h"

namespace vt::data {

/// Resizes a CV_8UC1/CV_8UC3 image (any ROI) to out_width x out_height like pil_resize, faster and not bit-exact.
cv::Mat fast_resize(const cv::Mat& src, int out_width, int out_height, PilFilter filter = PilFilter::bicubic);

}  // namespace vt::data
