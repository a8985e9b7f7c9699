#include "data/check.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "data/datasets.h"
#include "data/image_decode.h"

namespace fs = std::filesystem;

namespace vt::data {
namespace {

bool under_annotations(const fs::path& p) {
  for (const auto& part : p.parent_path())
    if (part == "annotations") return true;
  return false;
}

}  // namespace

DataCheckReport check_images(const std::string& dir, int threads, int64_t max_pixels) {
  VT_CHECK(fs::is_directory(dir), "[data] ", dir, " is not a folder");
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink))
    if (e.is_regular_file() && has_image_extension(e.path().string())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<std::string> errors(files.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < files.size();) {
      try {
        if (under_annotations(fs::relative(files[i], dir))) {
          load_label_png(files[i], max_pixels);
        } else {
          load_rgb(files[i], max_pixels);
        }
      } catch (...) {
        errors[i] = decode_failure_message(files[i]);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  DataCheckReport report;
  report.checked = static_cast<int64_t>(files.size());
  for (size_t i = 0; i < files.size(); ++i)
    if (!errors[i].empty()) report.bad.push_back({files[i], errors[i]});
  return report;
}

}  // namespace vt::data
