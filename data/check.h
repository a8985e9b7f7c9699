// `vitrain data check`: decode every image of a dataset tree and list the files that fail.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image_decode.h"

namespace vt::data {

struct BadFile {
  std::string path, error;
};

struct DataCheckReport {
  int64_t checked = 0;
  std::vector<BadFile> bad;  // sorted by path
};

/// Decodes every .jpg/.jpeg/.png (any case) below `dir` on `threads` threads: images fully as RGB, files under
/// an "annotations" folder (ADE20K) as single-channel label PNGs. Every failure (a bad header, more than
/// `max_pixels` pixels, a corrupt stream, an allocation failure, ...) is a BadFile whose error names the file.
/// Throws only if `dir` is not a folder.
DataCheckReport check_images(const std::string& dir, int threads, int64_t max_pixels = kDefaultMaxImagePixels);

}  // namespace vt::data
