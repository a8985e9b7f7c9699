// `vitrain data check`'s library part on a generated tree with every kind of file the issue names.
#include <gtest/gtest.h>

#include <filesystem>

#include "data/check.h"
#include "image_writers.h"
#include "unit/io_temp_dir.h"

namespace fs = std::filesystem;

namespace vt::test {
namespace {

TEST(DataCheck, ListsEveryBadFile) {
  TempDir dir;
  const fs::path cls = dir.path() / "train" / "n01";
  const fs::path ann = dir.path() / "ADEChallengeData2016" / "annotations" / "training";
  fs::create_directories(cls);
  fs::create_directories(ann);
  write_jpeg_rgb((cls / "good.JPEG").string(), pattern_rgb(40, 30));
  cv::Mat gray(10, 10, CV_8UC1, cv::Scalar(9));
  write_jpeg_gray((cls / "gray.JPEG").string(), gray);
  write_jpeg_cmyk((cls / "cmyk.JPEG").string(), cv::Mat(8, 8, CV_8UC4, cv::Scalar(10, 20, 30, 255)));
  write_png((cls / "png_named.JPEG").string(), pattern_rgb(9, 9));
  truncate_copy((cls / "good.JPEG").string(), (cls / "truncated.JPEG").string(), 200);
  write_bytes((cls / "empty.jpg").string(), "");
  write_bytes((cls / "readme.txt").string(), "ignored");
  cv::Mat label(5, 5, CV_8UC1);
  for (int i = 0; i < 25; ++i) label.data[i] = static_cast<uint8_t>(i * 6);
  write_png((ann / "ADE_train_00000001.png").string(), label);
  write_png((ann / "ADE_train_00000002.png").string(), pattern_rgb(5, 5));  // RGB: not a label map

  const data::DataCheckReport r = data::check_images(dir.path().string(), 3);
  EXPECT_EQ(r.checked, 8);
  ASSERT_EQ(r.bad.size(), 3u);
  EXPECT_EQ(fs::path(r.bad[0].path).filename(), "ADE_train_00000002.png");
  EXPECT_EQ(fs::path(r.bad[1].path).filename(), "empty.jpg");
  EXPECT_EQ(fs::path(r.bad[2].path).filename(), "truncated.JPEG");
  EXPECT_NE(r.bad[2].error.find("truncated.JPEG"), std::string::npos) << r.bad[2].error;
}

}  // namespace
}  // namespace vt::test
