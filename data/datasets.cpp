#include "data/datasets.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"

namespace fs = std::filesystem;

namespace vt::data {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The sub-folder of `dir` whose lower-cased name equals `name`, or "" (sorted, so the choice is stable).
std::string child_named(const std::string& dir, const std::string& name) {
  std::vector<std::string> hits;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && lower(e.path().filename().string()) == name) hits.push_back(e.path().string());
  std::sort(hits.begin(), hits.end());
  return hits.empty() ? "" : hits.front();
}

std::vector<std::string> images_below(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink))
    if (e.is_regular_file() && has_image_extension(e.path().string())) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool has_image_extension(const std::string& path) {
  const std::string ext = lower(fs::path(path).extension().string());
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

std::string find_split_dir(const std::string& root, const std::string& split) {
  VT_CHECK(fs::is_directory(root), "[data] dataset folder ", root, " does not exist");
  const std::string want = lower(split);
  std::vector<std::string> candidates{want};
  if (want == "val" || want == "validation") candidates = {"val", "validation", "valid", "eval", "evaluation"};
  for (const auto& c : candidates) {
    const std::string hit = child_named(root, c);
    if (!hit.empty()) return hit;
  }
  std::string tried;
  for (const auto& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
  VT_FAIL("[data] ", root, " has no '", split, "' split folder (looked for: ", tried, ")");
}

ClassificationFiles image_folder(const std::string& dir) {
  VT_CHECK(fs::is_directory(dir), "[data] image folder ", dir, " does not exist");
  ClassificationFiles out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) out.classes.push_back(e.path().filename().string());
  std::sort(out.classes.begin(), out.classes.end());
  VT_CHECK(!out.classes.empty(), "[data] ", dir, " has no class sub-folders");
  for (size_t c = 0; c < out.classes.size(); ++c)
    for (auto& path : images_below(fs::path(dir) / out.classes[c]))
      out.samples.push_back({std::move(path), static_cast<int64_t>(c)});
  VT_CHECK(!out.samples.empty(), "[data] ", dir, " has no .jpg/.jpeg/.png images in its ", out.classes.size(),
           " class folders");
  return out;
}

ClassificationFiles file_list(const std::string& list_path, const std::string& root) {
  std::ifstream in(list_path);
  VT_CHECK(in.good(), "[data] cannot open file list ", list_path);
  ClassificationFiles out;
  int64_t max_label = -1;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t last = line.find_last_not_of(" \t\r");
    const size_t split = line.find_last_of(" \t", last);
    VT_CHECK(split != std::string::npos && split > first, "[data] ", list_path, ":", line_no,
             ": expected '<path> <label>'");
    const std::string label_text = line.substr(split + 1, last - split);
    std::string path = line.substr(first, line.find_last_not_of(" \t", split) - first + 1);
    int64_t label = -1;
    size_t used = 0;
    try {
      label = std::stoll(label_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    VT_CHECK(used == label_text.size() && label >= 0, "[data] ", list_path, ":", line_no, ": bad label '", label_text,
             "'");
    if (fs::path(path).is_relative()) path = (fs::path(root) / path).string();
    out.samples.push_back({path, label});
    max_label = std::max(max_label, label);
  }
  VT_CHECK(!out.samples.empty(), "[data] file list ", list_path, " has no entries");
  for (int64_t c = 0; c <= max_label; ++c) out.classes.push_back(std::to_string(c));
  return out;
}

std::vector<SegmentationPair> ade20k(const std::string& root, const std::string& split) {
  fs::path base = root;
  if (fs::is_directory(base / "ADEChallengeData2016")) base /= "ADEChallengeData2016";
  const std::string s = lower(split);
  const std::string folder = (s == "train" || s == "training")   ? "training"
                             : (s == "val" || s == "validation") ? "validation"
                                                                 : split;
  const fs::path images = base / "images" / folder, labels = base / "annotations" / folder;
  VT_CHECK(fs::is_directory(images), "[data] ADE20K: ", images.string(), " does not exist");
  VT_CHECK(fs::is_directory(labels), "[data] ADE20K: ", labels.string(), " does not exist");
  std::vector<SegmentationPair> out;
  for (const auto& img : images_below(images)) {
    const fs::path label = labels / (fs::path(img).stem().string() + ".png");
    VT_CHECK(fs::exists(label), "[data] ADE20K: ", img, " has no annotation ", label.string());
    out.push_back({img, label.string()});
  }
  VT_CHECK(!out.empty(), "[data] ADE20K: no images in ", images.string());
  return out;
}

void reduce_zero_label(cv::Mat& label) {
  VT_CHECK(label.type() == CV_8UC1, "[data] reduce_zero_label needs an 8-bit single-channel label map");
  for (int y = 0; y < label.rows; ++y) {
    uint8_t* row = label.ptr<uint8_t>(y);
    for (int x = 0; x < label.cols; ++x) row[x] = row[x] == 0 ? 255 : (row[x] == 255 ? 255 : row[x] - 1);
  }
}

}  // namespace vt::data
