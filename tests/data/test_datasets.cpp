// Dataset layouts generated here: ImageFolder (class order, split names, extensions), file lists, ADE20K.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "data/datasets.h"
#include "image_writers.h"
#include "unit/io_temp_dir.h"

namespace fs = std::filesystem;

namespace vt::test {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Datasets, ImageFolderIndexesSortedClassFolders) {
  TempDir dir;
  const fs::path train = dir.path() / "train";
  for (const char* c : {"n02", "n01", "N03"}) fs::create_directories(train / c);
  fs::create_directories(train / "n01" / "nested");
  const cv::Mat img = pattern_rgb(8, 8);
  write_jpeg_rgb((train / "n02" / "b.JPEG").string(), img);
  write_jpeg_rgb((train / "n02" / "a.jpeg").string(), img);
  write_png((train / "n01" / "x.PNG").string(), img);
  write_jpeg_rgb((train / "n01" / "nested" / "y.Jpg").string(), img);
  write_bytes((train / "n01" / "notes.txt").string(), "not an image");
  write_jpeg_rgb((train / "N03" / "z.jpg").string(), img);
  write_bytes((train / "stray.jpg").string(), "files at the top level are not samples");

  const auto files = data::image_folder(data::find_split_dir(dir.path().string(), "train"));
  ASSERT_EQ(files.classes, (std::vector<std::string>{"N03", "n01", "n02"}));  // byte order, as Python's sorted
  ASSERT_EQ(files.samples.size(), 5u);
  EXPECT_EQ(fs::path(files.samples[0].path).filename(), "z.jpg");
  EXPECT_EQ(files.samples[0].label, 0);
  EXPECT_EQ(fs::path(files.samples[1].path).filename(), "y.Jpg");
  EXPECT_EQ(files.samples[2].label, 1);
  EXPECT_EQ(fs::path(files.samples[3].path).filename(), "a.jpeg");
  EXPECT_EQ(files.samples[4].label, 2);
}

TEST(Datasets, SplitDiscovery) {
  TempDir dir;
  fs::create_directories(dir.path() / "Validation");
  fs::create_directories(dir.path() / "train");
  EXPECT_EQ(fs::path(data::find_split_dir(dir.path().string(), "val")).filename(), "Validation");
  EXPECT_EQ(fs::path(data::find_split_dir(dir.path().string(), "validation")).filename(), "Validation");
  TempDir other;
  fs::create_directories(other.path() / "val");
  EXPECT_EQ(fs::path(data::find_split_dir(other.path().string(), "validation")).filename(), "val");
  const std::string err = error_of([&] { data::find_split_dir(other.path().string(), "train"); });
  EXPECT_NE(err.find("no 'train' split"), std::string::npos) << err;
  EXPECT_NE(error_of([&] { data::image_folder(other.file("val")); }).find("no class sub-folders"), std::string::npos);
}

TEST(Datasets, FileListWithLabels) {
  TempDir dir;
  write_bytes(dir.file("list.txt"), "# path label\nimgs/a b.jpg 3\n\n/abs/c.png\t0\r\nimgs/d.jpg 1\n");
  const auto files = data::file_list(dir.file("list.txt"), "/data/root");
  ASSERT_EQ(files.samples.size(), 3u);
  EXPECT_EQ(files.samples[0].path, "/data/root/imgs/a b.jpg");  // paths may contain spaces
  EXPECT_EQ(files.samples[0].label, 3);
  EXPECT_EQ(files.samples[1].path, "/abs/c.png");
  EXPECT_EQ(files.classes.size(), 4u);
  write_bytes(dir.file("bad.txt"), "a.jpg 1\nb.jpg x\n");
  const std::string err = error_of([&] { data::file_list(dir.file("bad.txt"), ""); });
  EXPECT_NE(err.find("bad.txt:2"), std::string::npos) << err;
}

TEST(Datasets, Ade20kLayout) {
  TempDir dir;
  const fs::path base = dir.path() / "ADEChallengeData2016";
  for (const char* split : {"training", "validation"}) {
    fs::create_directories(base / "images" / split);
    fs::create_directories(base / "annotations" / split);
  }
  cv::Mat label(6, 8, CV_8UC1);
  for (int i = 0; i < 48; ++i) label.data[i] = static_cast<uint8_t>(i * 3 % 151);
  for (int i : {2, 1}) {
    const std::string stem = "ADE_train_0000000" + std::to_string(i);
    write_jpeg_rgb((base / "images" / "training" / (stem + ".jpg")).string(), pattern_rgb(8, 6));
    write_png((base / "annotations" / "training" / (stem + ".png")).string(), label);
  }
  const auto pairs = data::ade20k(dir.path().string(), "train");
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(fs::path(pairs[0].image).filename(), "ADE_train_00000001.jpg");
  EXPECT_EQ(fs::path(pairs[0].label).filename(), "ADE_train_00000001.png");
  EXPECT_EQ(data::ade20k(base.string(), "training").size(), 2u);  // the inner folder works too
  write_jpeg_rgb((base / "images" / "validation" / "ADE_val_00000001.jpg").string(), pattern_rgb(8, 6));
  const std::string err = error_of([&] { data::ade20k(dir.path().string(), "val"); });
  EXPECT_NE(err.find("has no annotation"), std::string::npos) << err;
}

}  // namespace
}  // namespace vt::test
