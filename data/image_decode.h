// Image files to cv::Mat: JPEG through TurboJPEG (with DCT-domain down-scaling on request), PNG through libpng.
// The format is read from the content, not the name (ImageNet has a PNG named .JPEG). Every failure throws
// vt::Error naming the file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace vt::data {

enum class ImageFormat { jpeg, png, unknown };

struct ImageInfo {
  ImageFormat format = ImageFormat::unknown;
  int width = 0, height = 0;
};

/// The whole file as bytes; throws vt::Error naming the path when it cannot be read.
std::vector<uint8_t> read_file_bytes(const std::string& path);

/// Format and full-resolution size from the header only (no pixel decode). Throws on an unknown or bad header.
ImageInfo peek_image(const std::vector<uint8_t>& bytes, const std::string& path);

/// Decodes to 8-bit RGB (CV_8UC3). Grayscale becomes RGB; CMYK/YCCK JPEGs are converted as Pillow does
/// (R = (255-C)(255-K)/255 on un-inverted values). A JPEG is decoded at the smallest DCT scale 1/2, 1/4, 1/8
/// whose result is at least min_width x min_height (0 = full size); PNG is always full size. A truncated JPEG is
/// an error (as in Pillow); libjpeg's other warnings (extraneous bytes) are tolerated.
cv::Mat decode_rgb(const std::vector<uint8_t>& bytes, const std::string& path, int min_width = 0,
                   int min_height = 0);

/// read_file_bytes + decode_rgb at full size.
cv::Mat load_rgb(const std::string& path);

/// An 8-bit single-channel PNG's raw values (gray, or palette indices) as CV_8UC1: segmentation labels.
cv::Mat load_label_png(const std::string& path);

}  // namespace vt::data
