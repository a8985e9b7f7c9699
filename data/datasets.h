// Dataset layouts on disk, as lists of files: ImageNet's ImageFolder, a file list with labels, ADE20K.
// Listing only touches directory entries; decoding happens in the loader.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace vt::data {

struct LabeledFile {
  std::string path;
  int64_t label = 0;
};

struct ClassificationFiles {
  std::vector<std::string> classes;  // index = label
  std::vector<LabeledFile> samples;  // sorted by class, then path
};

/// True for .jpg/.jpeg/.png in any letter case (timm's IMG_EXTENSIONS subset we decode).
bool has_image_extension(const std::string& path);

/// `root/<split>` for the first existing candidate: "train" → train; "val" or "validation" → val, validation,
/// valid, eval, evaluation (timm's search list); any other name is used as is. Names compare case-insensitively.
std::string find_split_dir(const std::string& root, const std::string& split);

/// ImageFolder: one sub-folder per class (class index = sorted folder names, as torchvision), images found
/// recursively below each. Throws if there are no classes or no images.
ClassificationFiles image_folder(const std::string& dir);

/// A text file of "<path> <label>" lines (paths relative to `root` unless absolute; '#' comments and blank
/// lines skipped). Errors name the file and line.
ClassificationFiles file_list(const std::string& list_path, const std::string& root);

struct SegmentationPair {
  std::string image, label;
};

inline constexpr int kAde20kClasses = 150;

/// ADE20K (ADEChallengeData2016): images/<split>/*.jpg paired with annotations/<split>/*.png by stem; split is
/// "training" or "validation" ("train"/"val" accepted). `root` may be the ADEChallengeData2016 folder or its
/// parent. Throws on a missing folder or an image without annotation.
std::vector<SegmentationPair> ade20k(const std::string& root, const std::string& split);

/// mmseg's reduce_zero_label in place: 0 → 255 (ignore), v → v−1 otherwise, 255 stays 255.
void reduce_zero_label(cv::Mat& label);

}  // namespace vt::data
