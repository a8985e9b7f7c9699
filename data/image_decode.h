// Image files to cv::Mat: JPEG through TurboJPEG (with DCT-domain down-scaling on request), PNG through libpng.
// The format is read from the content, not the name (ImageNet has a PNG named .JPEG). Every failure throws
// vt::Error naming the file. The size is read from the header and checked against a pixel limit before any pixel
// buffer is allocated, so a few-byte file declaring 100000x100000 is an error, not a 30 GB allocation.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace vt::data {

enum class ImageFormat { jpeg, png, unknown };

/// Pillow's Image.MAX_IMAGE_PIXELS (the data.max_image_pixels default): a larger image is a bad file.
constexpr int64_t kDefaultMaxImagePixels = 89478485;

struct ImageInfo {
  ImageFormat format = ImageFormat::unknown;
  int width = 0, height = 0;
};

/// The whole file as bytes; throws vt::Error naming the path when it cannot be read.
std::vector<uint8_t> read_file_bytes(const std::string& path);

/// Format and full-resolution size from the header only (no pixel decode). Throws on an unknown or bad header,
/// or when width x height exceeds `max_pixels` (0: no limit).
ImageInfo peek_image(const std::vector<uint8_t>& bytes, const std::string& path,
                     int64_t max_pixels = kDefaultMaxImagePixels);

/// Decodes to 8-bit RGB (CV_8UC3). Grayscale becomes RGB; CMYK/YCCK JPEGs are converted as Pillow does
/// (R = (255-C)(255-K)/255 on un-inverted values). A JPEG is decoded at the smallest DCT scale 1/2, 1/4, 1/8
/// whose result is at least min_width x min_height (0 = full size); PNG is always full size. A truncated JPEG is
/// an error (as in Pillow); libjpeg's other warnings (extraneous bytes) are tolerated. An image of more than
/// `max_pixels` (full size; 0: no limit) is an error raised from its header.
cv::Mat decode_rgb(const std::vector<uint8_t>& bytes, const std::string& path, int min_width = 0, int min_height = 0,
                   int64_t max_pixels = kDefaultMaxImagePixels);

/// read_file_bytes + decode_rgb at full size.
cv::Mat load_rgb(const std::string& path, int64_t max_pixels = kDefaultMaxImagePixels);

/// An 8-bit single-channel PNG's raw values (gray, or palette indices) as CV_8UC1: segmentation labels.
cv::Mat load_label_png(const std::string& path, int64_t max_pixels = kDefaultMaxImagePixels);

/// Inside a catch handler: the message of the exception being handled, whatever its type (vt::Error,
/// std::bad_alloc, cv::Exception, anything else), naming `path` (prefixed when the message does not already).
std::string decode_failure_message(const std::string& path);

}  // namespace vt::data
