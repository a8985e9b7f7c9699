// Hostile image files: decompression bombs are refused from their header (data.max_image_pixels) before any pixel
// buffer exists; every kind of bad file, whatever the exception behind it, is named, skipped and counted by the
// loader within max_bad_files, and listed with its reason by check_images.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <new>
#include <opencv2/core.hpp>

#include "core/error.h"
#include "data/check.h"
#include "data/image_decode.h"
#include "data/loader.h"
#include "data/sources.h"
#include "hostile_images.h"
#include "image_writers.h"
#include "unit/io_temp_dir.h"

namespace fs = std::filesystem;

namespace vt::test {
namespace {

// The error `fn` throws (empty: none).
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ImageBombs, PngDeclaring100000SquaredIsRefusedFromItsHeader) {
  TempDir dir;
  const std::string path = dir.file("bomb.png");
  write_png_declaring(path, 100000, 100000);
  EXPECT_LT(fs::file_size(path), 100u);
  const std::vector<uint8_t> bytes = data::read_file_bytes(path);
  // The header alone says 10^10 pixels (no limit: nothing is decoded, nothing allocated).
  const data::ImageInfo info = data::peek_image(bytes, path, 0);
  EXPECT_EQ(info.width, 100000);
  EXPECT_EQ(info.height, 100000);
  for (const std::string& e :
       {error_of([&] { data::peek_image(bytes, path); }), error_of([&] { data::decode_rgb(bytes, path); }),
        error_of([&] { data::load_rgb(path); })}) {
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find("100000x100000 = 10000000000 pixels, more than data.max_image_pixels = 89478485"),
              std::string::npos)
        << e;
  }
}

TEST(ImageBombs, JpegDeclaring16000SquaredIsRefusedFromItsHeader) {
  TempDir dir;
  const std::string path = dir.file("bomb.JPEG");
  write_jpeg_declaring(path, 16000, 16000);
  EXPECT_LT(fs::file_size(path), 5000u);
  const std::vector<uint8_t> bytes = data::read_file_bytes(path);
  const data::ImageInfo info = data::peek_image(bytes, path, 0);
  EXPECT_EQ(info.width, 16000);
  EXPECT_EQ(info.height, 16000);
  for (const std::string& e :
       {error_of([&] { data::peek_image(bytes, path); }), error_of([&] { data::decode_rgb(bytes, path, 224, 224); }),
        error_of([&] { data::load_rgb(path); })}) {
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find("16000x16000 = 256000000 pixels, more than data.max_image_pixels"), std::string::npos) << e;
  }
}

// A limit set low makes an ordinary 40x40 image bad, in every decoder, and the limit itself is allowed.
TEST(ImageBombs, TheLimitCountsPixels) {
  TempDir dir;
  write_jpeg_rgb(dir.file("a.jpg"), pattern_rgb(40, 40));
  write_png(dir.file("b.png"), pattern_rgb(40, 40));
  write_png(dir.file("gray.png"), cv::Mat(40, 40, CV_8UC1, cv::Scalar(3)));
  for (const std::string name : {"a.jpg", "b.png"}) {
    const std::string e = error_of([&] { data::load_rgb(dir.file(name), 1000); });
    EXPECT_NE(e.find(dir.file(name) + ": 40x40 = 1600 pixels, more than data.max_image_pixels = 1000"),
              std::string::npos)
        << e;
    EXPECT_EQ(data::load_rgb(dir.file(name), 1600).cols, 40);
  }
  EXPECT_NE(error_of([&] { data::load_label_png(dir.file("gray.png"), 1000); }).find("1600 pixels"), std::string::npos);
  EXPECT_EQ(data::load_label_png(dir.file("gray.png"), 1600).rows, 40);
}

TEST(ImageBombs, AnyExceptionWhileDecodingGivesAMessageNamingTheFile) {
  const std::string path = "/data/val/n01/x.JPEG";
  auto message_for = [&](auto thrower) {
    try {
      thrower();
    } catch (...) {
      return data::decode_failure_message(path);
    }
    return std::string("nothing thrown");
  };
  EXPECT_EQ(message_for([] { throw std::bad_alloc(); }),
            "[data] " + path + ": out of memory while decoding (std::bad_alloc)");
  const std::string cv_msg = message_for([] {
    cv::error(cv::Error::StsNoMem, "Failed to allocate 30000000000 bytes", "OutOfMemoryError", __FILE__, __LINE__);
  });
  EXPECT_EQ(cv_msg.rfind("[data] " + path + ": ", 0), 0u) << cv_msg;
  EXPECT_NE(cv_msg.find("Failed to allocate 30000000000 bytes"), std::string::npos) << cv_msg;
  EXPECT_EQ(message_for([] { throw 42; }), "[data] " + path + ": unknown exception while decoding");
  // A message that already names the file is kept as it is.
  EXPECT_EQ(message_for([&] { throw Error("[data] " + path + ": corrupt JPEG: premature end of data"); }),
            "[data] " + path + ": corrupt JPEG: premature end of data");
}

// 4 good JPEGs (labels 0..3) and the 5 hostile files (label 9), in that order.
std::vector<data::LabeledFile> mixed_files(const TempDir& dir, std::vector<HostileFile>* hostile) {
  std::vector<data::LabeledFile> files;
  for (int i = 0; i < 4; ++i) {
    files.push_back({dir.file("good" + std::to_string(i) + ".JPEG"), i});
    write_jpeg_rgb(files.back().path, pattern_rgb(40, 40, i));
  }
  *hostile = write_hostile_files(dir.path().string());
  for (const HostileFile& h : *hostile) files.push_back({h.path, 9});
  return files;
}

std::vector<std::string> sorted_paths(const std::vector<HostileFile>& files) {
  std::vector<std::string> paths;
  for (const HostileFile& h : files) paths.push_back(h.path);
  std::sort(paths.begin(), paths.end());
  return paths;
}

data::Loader::Sampler in_order(int64_t n) {
  return [n](int64_t) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    return order;
  };
}

TEST(ImageBombs, EveryHostileFileIsSkippedAndCountedWithinMaxBadFiles) {
  TempDir dir;
  std::vector<HostileFile> hostile;
  const std::vector<data::LabeledFile> files = mixed_files(dir, &hostile);
  const data::ImageFileSource source(files, data::train_transform(16));
  data::LoaderOptions o;
  o.batch_size = 3;
  o.threads = 2;
  o.drop_last = false;
  o.max_bad_files = 5;
  {
    data::Loader loader(source, in_order(9), o);
    loader.start_epoch(0);
    data::Batch b;
    int64_t rows = 0;
    while (loader.next(b)) {
      rows += b.images.size(0);
      for (const double label : b.labels.to_vector()) EXPECT_LT(label, 4);  // only good files fill the rows
    }
    EXPECT_EQ(rows, 9);  // training replaces each bad file by a good neighbour
    EXPECT_EQ(loader.bad_files(), sorted_paths(hostile));
  }
  o.max_bad_files = 4;
  data::Loader strict(source, in_order(9), o);
  strict.start_epoch(0);
  data::Batch b;
  const std::string e = error_of([&] {
    while (strict.next(b)) {
    }
  });
  EXPECT_NE(e.find("5 bad files, more than max_bad_files = 4"), std::string::npos) << e;
}

// Evaluation leaves a bad file out: each good image once, no neighbour counted twice, short or skipped batches.
TEST(ImageBombs, EvaluationLeavesBadFilesOut) {
  TempDir dir;
  std::vector<HostileFile> hostile;
  const std::vector<data::LabeledFile> files = mixed_files(dir, &hostile);
  const data::ImageFileSource source(files, data::eval_transform(16));
  data::LoaderOptions o;
  o.batch_size = 2;
  o.threads = 2;
  o.drop_last = false;
  o.replace_bad = false;
  data::Loader loader(source, in_order(9), o);
  loader.start_epoch(0);
  data::Batch b;
  std::vector<double> labels;
  std::vector<int64_t> sizes;
  Tensor second_batch;
  while (loader.next(b)) {
    ASSERT_EQ(b.images.size(0), b.labels.size(0));
    sizes.push_back(b.images.size(0));
    if (sizes.size() == 2) second_batch = b.images;
    for (const double l : b.labels.to_vector()) labels.push_back(l);
  }
  EXPECT_EQ(labels, (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2}));  // batches 2, 3, 4 hold only bad files
  EXPECT_EQ(loader.bad_files(), sorted_paths(hostile));
  // The rows kept are the good images' own pixels.
  data::SampleRng rng(0, 0, 3);
  ASSERT_TRUE(second_batch.defined());
  const std::vector<double> kept = second_batch.to_vector();
  std::vector<float> alone(3 * 16 * 16);
  source.load(3, rng, alone.data());
  for (size_t i = 0; i < alone.size(); ++i) ASSERT_FLOAT_EQ(kept[alone.size() + i], alone[i]) << i;
}

TEST(ImageBombs, CheckImagesNamesEveryFileWithItsReason) {
  TempDir dir;
  std::vector<HostileFile> hostile;
  mixed_files(dir, &hostile);
  const data::DataCheckReport r = data::check_images(dir.path().string(), 2);
  EXPECT_EQ(r.checked, 9);
  ASSERT_EQ(r.bad.size(), hostile.size());
  for (const HostileFile& h : hostile) {
    const auto it = std::find_if(r.bad.begin(), r.bad.end(), [&](const data::BadFile& f) { return f.path == h.path; });
    ASSERT_NE(it, r.bad.end()) << h.path;
    EXPECT_NE(it->error.find(h.path), std::string::npos) << it->error;
    EXPECT_NE(it->error.find(h.reason), std::string::npos) << it->error;
  }
  EXPECT_EQ(data::check_images(dir.path().string(), 2, 1000).bad.size(), 9u);  // the 40x40 images too
}

}  // namespace
}  // namespace vt::test
