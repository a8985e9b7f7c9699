// Decodes only the part of a JPEG a training crop needs (libjpeg-turbo's jpeg_crop_scanline and
// jpeg_skip_scanlines, optionally at a DCT scale 1/2, 1/4, 1/8): rows below the crop are never decoded, rows above
// are entropy-decoded only, columns outside it skip the inverse DCT and colour conversion.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "data/transforms.h"

namespace vt::data {

struct JpegRegion {
  cv::Mat pixels;  // 8-bit RGB, covering at least the crop (empty: use decode_rgb instead)
  CropBox crop;    // the requested crop in `pixels`' coordinates (scaled by the DCT factor)
};

/// The region of a JPEG of full size width x height covering `box`, decoded at the smallest scale 1/2, 1/4, 1/8
/// that keeps the crop at least min_side pixels on each side (min_side 0: full scale). Returns empty pixels when
/// the file should take the whole-image path instead (CMYK/YCCK, or no end-of-image marker: a truncated file must
/// fail as in Pillow, wherever the crop is). Throws vt::Error naming the file for a corrupt JPEG. width and height
/// are peek_image's, which has already applied the pixel limit.
JpegRegion decode_jpeg_region(const std::vector<uint8_t>& bytes, const std::string& path, int width, int height,
                              const CropBox& box, int min_side);

}  // namespace vt::data
