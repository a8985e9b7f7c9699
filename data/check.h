// `vitrain data check`: decode every image of a dataset tree and list the files that fail.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt::data {

struct BadFile {
  std::string path, error;
};

struct DataCheckReport {
  int64_t checked = 0;
  std::vector<BadFile> bad;  // sorted by path
};

/// Decodes every .jpg/.jpeg/.png (any case) below `dir` on `threads` threads: images fully as RGB, files under
/// an "annotations" folder (ADE20K) as single-channel label PNGs. Throws only if `dir` is not a folder.
DataCheckReport check_images(const std::string& dir, int threads);

}  // namespace vt::data
