// Mini-ADE20K generator (see the header).
#include "data/mini_ade20k.h"

#include <filesystem>

#include <opencv2/core.hpp>

#include "data/image_writers.h"

namespace vt::test {

namespace {

// A flat colour per class, far apart so JPEG artefacts never blur two classes together.
cv::Vec3b class_colour(int c) {
  static const cv::Vec3b kColours[] = {{230, 40, 40},  {40, 200, 60},  {50, 60, 230},   {230, 220, 50},
                                       {200, 60, 210}, {40, 210, 220}, {128, 128, 128}, {250, 250, 250}};
  return kColours[static_cast<size_t>(c) % (sizeof(kColours) / sizeof(kColours[0]))];
}

}  // namespace

std::string write_mini_ade20k(const std::string& root, const MiniAde20kOptions& o) {
  namespace fs = std::filesystem;
  const fs::path base = fs::path(root) / "ADEChallengeData2016";
  int index = 0;
  for (const auto& [split, n] : {std::pair<std::string, int>{"training", o.train}, {"validation", o.val}}) {
    fs::create_directories(base / "images" / split);
    fs::create_directories(base / "annotations" / split);
    for (int i = 0; i < n; ++i, ++index) {
      const int w = o.width + 4 * (index % 3), h = o.height + 3 * (index % 2);
      const int bands = 2 + index % 3;
      cv::Mat image(h, w, CV_8UC3), label(h, w, CV_8UC1);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const int band = x * bands / w;
          const int c = (band + index) % o.classes;  // 0-based class; raw label c + 1
          const bool frame = x == 0 || y == 0 || x == w - 1 || y == h - 1;
          image.at<cv::Vec3b>(y, x) = class_colour(c);
          label.at<uint8_t>(y, x) = frame ? 0 : static_cast<uint8_t>(c + 1);
        }
      char stem[64];
      std::snprintf(stem, sizeof(stem), "ADE_%s_%08d", split == "training" ? "train" : "val", i + 1);
      write_jpeg_rgb((base / "images" / split / (std::string(stem) + ".jpg")).string(), image);
      write_png((base / "annotations" / split / (std::string(stem) + ".png")).string(), label);
    }
  }
  return base.string();
}

io::Config mini_segmenter_config(const std::string& config, const std::string& data_dir, const std::string& out,
                                 const std::vector<std::string>& extra) {
  // clang-format off
  std::vector<std::string> sets = {
      "model.img_size=32", "model.patch_size=8", "model.embed_dim=48", "model.depth=2", "model.num_heads=3",
      "model.initial_checkpoint=\"\"", "model.decoder.heads=2", "model.decoder.head_dim=8",
      "model.decoder.reps_grid=2", "model.attention.m=4", "model.attention.k=4", "data.data_dir=" + data_dir,
      "data.workers=2", "optim.lr=0.05", "train.epochs=3", "train.batch_size=4", "train.threads=2",
      "train.device=cpu", "train.log_interval=1", "train.output=" + out, "eval.batch_size=4",
      "eval.seg_short_side=32", "eval.seg_long_side=128", "eval.seg_stride=16"};
  // clang-format on
  sets.insert(sets.end(), extra.begin(), extra.end());
  return io::load_config((std::filesystem::path(VT_SOURCE_DIR) / "configs" / "ade20k" / config).string(), sets);
}

}  // namespace vt::test
