// The threaded loader: batches independent of the thread count (random and real-decode sources), coverage,
// bad files skipped and counted up to a limit, worker errors surfacing with the file, shutdown mid-epoch.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "core/error.h"
#include "data/loader.h"
#include "data/samplers.h"
#include "data/sources.h"
#include "image_writers.h"
#include "test_util.h"
#include "unit/io_temp_dir.h"

namespace fs = std::filesystem;

namespace vt::test {
namespace {

// Values drawn from the per-sample stream, so any thread-dependence of the streams shows up.
class RandomSource : public data::SampleSource {
 public:
  explicit RandomSource(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  std::array<int64_t, 3> image_shape() const override { return {2, 3, 4}; }
  std::string describe(int64_t i) const override { return "/fake/img_" + std::to_string(i) + ".JPEG"; }
  int64_t load(int64_t i, data::SampleRng& rng, float* image) const override {
    if (i == fail_at_) throw std::runtime_error("disk on fire");
    for (int k = 0; k < 24; ++k) image[k] = static_cast<float>(rng.uniform());
    return i;
  }

 private:
  int64_t n_, fail_at_;
};

std::vector<std::vector<double>> run_epoch(const data::SampleSource& src, data::Loader::Sampler sampler,
                                           data::LoaderOptions o, int64_t epoch, std::vector<int64_t>* labels,
                                           std::vector<std::string>* bad = nullptr) {
  data::Loader loader(src, std::move(sampler), o);
  loader.start_epoch(epoch);
  std::vector<std::vector<double>> out;
  data::Batch b;
  while (loader.next(b)) {
    out.push_back(b.images.to_vector());
    for (double v : b.labels.to_vector()) labels->push_back(static_cast<int64_t>(v));
  }
  EXPECT_EQ(static_cast<int64_t>(out.size()), loader.batches_per_epoch());
  if (bad) *bad = loader.bad_files();
  return out;
}

TEST(Loader, BatchesDoNotDependOnThreadCount) {
  RandomSource src(103);
  auto sampler = [](int64_t epoch) { return data::shuffled_order(103, 11, epoch); };
  data::LoaderOptions o;
  o.batch_size = 8;
  o.drop_last = false;
  o.prefetch_batches = 2;
  std::vector<int64_t> l1, l4;
  o.threads = 1;
  const auto one = run_epoch(src, sampler, o, 3, &l1);
  o.threads = 4;
  const auto four = run_epoch(src, sampler, o, 3, &l4);
  EXPECT_EQ(one, four);
  EXPECT_EQ(l1, l4);
  EXPECT_EQ(l1, data::shuffled_order(103, 11, 3));  // every sample once, in the sampler's order
  EXPECT_EQ(one.size(), 13u);
  std::vector<int64_t> l_next;
  EXPECT_NE(run_epoch(src, sampler, o, 4, &l_next), four);  // a new epoch draws anew
}

TEST(Loader, RealImagesWithABadFileAreIdenticalForOneAndFourThreads) {
  TempDir dir;
  std::vector<data::LabeledFile> files;
  for (int i = 0; i < 12; ++i) {
    const std::string p = dir.file("img" + std::to_string(i) + ".JPEG");
    if (i % 4 == 1) {
      write_png(p, pattern_rgb(50 + i, 40, i));  // a PNG named .JPEG
    } else {
      write_jpeg_rgb(p, pattern_rgb(64 + 3 * i, 48 + i, i));
    }
    files.push_back({p, i % 3});
  }
  truncate_copy(dir.file("img0.JPEG"), dir.file("truncated.JPEG"), 300);
  files.push_back({dir.file("truncated.JPEG"), 0});
  auto t = data::deit_train_transform(16);  // RandomResizedCrop, flip, RandAugment, normalize, erasing
  t.erasing.probability = 0.5;
  data::ImageFileSource src(files, t);
  auto sampler = [](int64_t epoch) { return data::shuffled_order(13, 1, epoch); };
  data::LoaderOptions o;
  o.batch_size = 4;
  o.max_bad_files = 1;
  std::vector<int64_t> l1, l4;
  std::vector<std::string> bad1, bad4;
  o.threads = 1;
  const auto one = run_epoch(src, sampler, o, 0, &l1, &bad1);
  o.threads = 4;
  const auto four = run_epoch(src, sampler, o, 0, &l4, &bad4);
  ASSERT_EQ(one.size(), 3u);  // 13 samples, batch 4, drop_last
  EXPECT_EQ(one, four);
  EXPECT_EQ(l1, l4);
  EXPECT_EQ(one[0].size(), 4u * 3 * 16 * 16);
  // The truncated file is met only if the epoch reaches it; when it does, it is counted once.
  const auto order = data::shuffled_order(13, 1, 0);
  const bool reached = std::find(order.begin(), order.begin() + 12, 12) != order.begin() + 12;
  EXPECT_EQ(bad1.size(), reached ? 1u : 0u);
  EXPECT_EQ(bad1, bad4);
}

TEST(Loader, TooManyBadFilesStopsTheRunNamingTheFile) {
  TempDir dir;
  std::vector<data::LabeledFile> files;
  write_jpeg_rgb(dir.file("good.jpg"), pattern_rgb(32, 32));
  files.push_back({dir.file("good.jpg"), 0});
  write_bytes(dir.file("broken.JPEG"), "garbage");
  files.push_back({dir.file("broken.JPEG"), 1});
  data::ImageFileSource src(files, data::eval_transform(8));
  data::LoaderOptions o;
  o.batch_size = 2;
  o.threads = 2;
  o.max_bad_files = 0;
  data::Loader loader(
      src,
      [](int64_t) {
        return std::vector<int64_t>{0, 1};
      },
      o);
  loader.start_epoch(0);
  data::Batch b;
  try {
    loader.next(b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.JPEG"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_bad_files"), std::string::npos) << e.what();
  }
}

TEST(Loader, AFailingWorkerSurfacesItsError) {
  RandomSource src(64, 37);
  data::LoaderOptions o;
  o.batch_size = 4;
  o.threads = 4;
  data::Loader loader(
      src, [](int64_t) { return data::shuffled_order(64, 0, 0); }, o);
  loader.start_epoch(0);
  data::Batch b;
  try {
    while (loader.next(b)) {
    }
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/fake/img_37.JPEG"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("disk on fire"), std::string::npos) << e.what();
  }
}

TEST(Loader, ShutsDownCleanlyMidEpochAndRestarts) {
  RandomSource src(1000);
  data::LoaderOptions o;
  o.batch_size = 10;
  o.threads = 3;
  o.prefetch_batches = 2;
  data::Loader loader(
      src, [](int64_t e) { return data::shuffled_order(1000, 5, e); }, o);
  loader.start_epoch(0);
  data::Batch first, b;
  ASSERT_TRUE(loader.next(first));
  loader.start_epoch(0);  // restart the same epoch: the same first batch
  ASSERT_TRUE(loader.next(b));
  EXPECT_EQ(first.images.to_vector(), b.images.to_vector());
  ASSERT_TRUE(loader.next(b));
}  // destroyed with workers blocked on the full queue

TEST(Loader, Ade20kBatchesCarryLabelMaps) {
  TempDir dir;
  const fs::path base = dir.path() / "ADEChallengeData2016";
  fs::create_directories(base / "images" / "training");
  fs::create_directories(base / "annotations" / "training");
  for (int i = 1; i <= 6; ++i) {
    const std::string stem = "ADE_train_0000000" + std::to_string(i);
    write_jpeg_rgb((base / "images" / "training" / (stem + ".jpg")).string(), pattern_rgb(40 + i, 30, i));
    cv::Mat label(30, 40 + i, CV_8UC1);
    for (int k = 0; k < label.rows * label.cols; ++k) label.data[k] = static_cast<uint8_t>(k % 151);
    write_png((base / "annotations" / "training" / (stem + ".png")).string(), label);
  }
  data::SegTrainConfig cfg;
  cfg.scale_long = 128;
  cfg.scale_short = 32;
  cfg.crop = 24;
  data::SegmentationSource src(data::ade20k(dir.path().string(), "training"), cfg);
  data::LoaderOptions o;
  o.batch_size = 2;
  o.threads = 1;
  data::Loader loader(
      src, [](int64_t e) { return data::shuffled_order(6, 2, e); }, o);
  loader.start_epoch(0);
  data::Batch b;
  ASSERT_TRUE(loader.next(b));
  EXPECT_EQ(b.images.shape(), (Shape{2, 3, 24, 24}));
  EXPECT_EQ(b.labels.shape(), (Shape{2, 24, 24}));
  for (double v : b.labels.to_vector()) ASSERT_TRUE(v == 255 || (v >= 0 && v < data::kAde20kClasses)) << v;
  o.threads = 3;
  std::vector<double> first = b.labels.to_vector();
  data::Loader again(
      src, [](int64_t e) { return data::shuffled_order(6, 2, e); }, o);
  again.start_epoch(0);
  ASSERT_TRUE(again.next(b));
  EXPECT_EQ(b.labels.to_vector(), first);
}

TEST(Loader, SegmentationImagesAboveThePixelLimitAreBadFilesNamed) {
  TempDir dir;
  const fs::path base = dir.path() / "ADEChallengeData2016";
  fs::create_directories(base / "images" / "training");
  fs::create_directories(base / "annotations" / "training");
  const std::string image = (base / "images" / "training" / "ADE_train_00000001.jpg").string();
  write_jpeg_rgb(image, pattern_rgb(40, 30, 1));
  write_png((base / "annotations" / "training" / "ADE_train_00000001.png").string(),
            cv::Mat(30, 40, CV_8UC1, cv::Scalar(3)));
  data::SegTrainConfig cfg;
  cfg.scale_long = 128;
  cfg.scale_short = 32;
  cfg.crop = 24;
  cfg.max_image_pixels = 1199;  // the image has 1200
  const data::SegmentationSource src(data::ade20k(dir.path().string(), "training"), cfg);
  std::vector<float> pixels(3 * 24 * 24);
  std::vector<int64_t> labels(24 * 24);
  data::SampleRng rng(0, 0, 0);
  try {
    src.load_with_label_map(0, rng, pixels.data(), labels.data());
    ADD_FAILURE() << "an image above max_image_pixels loaded";
  } catch (const data::BadSampleError& e) {
    EXPECT_CONTAINS(e.what(), image);
    EXPECT_CONTAINS(e.what(), "more than data.max_image_pixels = 1199");
  }
  const data::SegmentationSource no_limit(data::ade20k(dir.path().string(), "training"), [&] {
    data::SegTrainConfig c = cfg;
    c.max_image_pixels = 1200;
    return c;
  }());
  no_limit.load_with_label_map(0, rng, pixels.data(), labels.data());
}

TEST(Loader, FashionMnistStyleSourceAndSynthetic) {
  data::IdxImages images;
  images.n = 4;
  images.rows = 2;
  images.cols = 3;
  images.pixels = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25, 255, 255, 255, 0, 0, 0};
  std::vector<uint8_t> labels{3, 1, 4, 1};
  data::IdxSource idx(images, labels, 0.0, 0.0f, 1.0f);
  std::vector<float> out(6);
  data::SampleRng rng(0, 0, 0);
  EXPECT_EQ(idx.load(3, rng, out.data()), 1);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[5], 0.0f);
  data::SyntheticSource syn(10, 3, {3, 4, 4});
  std::vector<float> a(48), c(48);
  EXPECT_EQ(syn.load(7, rng, a.data()), 1);
  syn.load(7, rng, c.data());
  EXPECT_EQ(a, c);
}

}  // namespace
}  // namespace vt::test
