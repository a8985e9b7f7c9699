// Test images written with TurboJPEG and libpng (OpenCV here has no imgcodecs), and small trees in the real
// dataset layouts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace vt::test {

/// A smooth, deterministic colour pattern (so JPEG round trips stay close).
cv::Mat pattern_rgb(int width, int height, int seed = 0);

/// Encodes a CV_8UC3 RGB image (quality 95, 4:4:4) to a JPEG file.
void write_jpeg_rgb(const std::string& path, const cv::Mat& rgb, int quality = 95);
/// Encodes a CV_8UC1 image as a grayscale JPEG.
void write_jpeg_gray(const std::string& path, const cv::Mat& gray, int quality = 95);
/// Encodes a CV_8UC4 image of TurboJPEG (Adobe-inverted) CMYK values as a YCCK JPEG.
void write_jpeg_cmyk(const std::string& path, const cv::Mat& cmyk, int quality = 95);
/// Writes a CV_8UC3 RGB or CV_8UC1 gray PNG.
void write_png(const std::string& path, const cv::Mat& img);
/// Copies the first `keep` bytes of `src` to `dst`.
void truncate_copy(const std::string& src, const std::string& dst, size_t keep);

/// Max |a - b| over all values of two same-shape 8-bit images.
int max_abs_diff_u8(const cv::Mat& a, const cv::Mat& b);

}  // namespace vt::test
