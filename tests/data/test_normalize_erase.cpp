// The training split of timm's prefetcher: workers ship u8 pixels + erasing draws, normalize_and_erase finishes
// them on the device. On the CPU the finished batches equal the f32 loader's batches bit for bit (same seeds,
// every sample erased or not as load() would), for 1 and 4 threads; bad shapes are named. On a GPU (skipped
// without one) the kernel equals the CPU version: normalization bit for bit, the erasing noise within float
// rounding of log/sin/cos.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "data/loader.h"
#include "data/normalize_erase.h"
#include "data/samplers.h"
#include "data/sources.h"
#include "image_writers.h"
#include "unit/io_temp_dir.h"
#ifdef VT_WITH_CUDA
#include "cuda/device_test_util.h"
#endif

namespace vt::test {
namespace {

std::vector<data::LabeledFile> jpeg_files(TempDir& dir, int n) {
  std::vector<data::LabeledFile> files;
  for (int i = 0; i < n; ++i) {
    const std::string p = dir.file("img" + std::to_string(i) + ".JPEG");
    write_jpeg_rgb(p, pattern_rgb(60 + 5 * i, 44 + 3 * i, i));
    files.push_back({p, i % 4});
  }
  return files;
}

// Every batch of one epoch: the f32 images (finished by normalize_and_erase in pixel mode) and the labels.
std::vector<std::pair<std::vector<double>, std::vector<double>>> epoch_batches(const data::ImageFileSource& src,
                                                                               bool pixels, int threads) {
  data::LoaderOptions o;
  o.batch_size = 5;
  o.threads = threads;
  o.seed = 7;
  o.pixels = pixels;
  const int64_t n = src.size();
  data::Loader loader(
      src, [n](int64_t epoch) { return data::shuffled_order(n, 3, epoch); }, o);
  loader.start_epoch(2);
  std::vector<std::pair<std::vector<double>, std::vector<double>>> out;
  data::Batch b;
  while (loader.next(b)) {
    if (pixels) {
      EXPECT_EQ(b.images.dtype(), DType::u8);
      EXPECT_EQ(b.images.shape(), (Shape{5, 24, 24, 3}));
      b.images = data::normalize_and_erase(b.images, b.erasing, src.normalization());
    } else {
      EXPECT_FALSE(b.erasing.defined());
    }
    out.emplace_back(b.images.to_vector(), b.labels.to_vector());
  }
  return out;
}

TEST(NormalizeErase, PixelBatchesFinishedOnTheDeviceEqualTheFloatLoadersBitForBit) {
  TempDir dir;
  auto t = data::deit_train_transform(24);  // RandAugment, flip, crop; erasing half the time
  t.erasing.probability = 0.5;
  const data::ImageFileSource src(jpeg_files(dir, 15), t);
  const auto reference = epoch_batches(src, false, 1);
  ASSERT_EQ(reference.size(), 3u);
  EXPECT_EQ(epoch_batches(src, true, 1), reference);
  EXPECT_EQ(epoch_batches(src, true, 4), reference);
  // The test means something only if some samples were erased: an erased value is far outside the
  // normalized range of its pixel more often than not; count values that no 8-bit pixel maps to.
  const data::Normalization norm;
  int64_t off_grid = 0;
  for (const auto& [images, labels] : reference)
    for (size_t i = 0; i < images.size(); ++i) {
      const int c = static_cast<int>(i / (24 * 24) % 3);
      const double v = (images[i] * norm.std[c] + norm.mean[c]) * 255.0;
      off_grid += std::abs(v - std::nearbyint(v)) > 1e-3;
    }
  EXPECT_GT(off_grid, 100);
}

TEST(NormalizeErase, EvalSourcesAndBadShapesStayOnTheFloatPath) {
  TempDir dir;
  const data::ImageFileSource eval(jpeg_files(dir, 5), data::eval_transform(24));
  EXPECT_FALSE(eval.yields_pixels());
  EXPECT_THROW(data::normalize_and_erase(Tensor::zeros({2, 3, 4, 4}), Tensor(), {}), Error);  // f32, not u8
  const Tensor px = Tensor::zeros({2, 4, 4, 3}, DType::u8);
  try {
    data::normalize_and_erase(px, Tensor::zeros({3, 5}, DType::i64), {});
    FAIL() << "a [3, 5] erasing tensor for 2 images was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("erasing must be i64 [2, 5]"), std::string::npos) << e.what();
  }
}

#ifdef VT_WITH_CUDA
TEST(NormalizeErase, CudaMatchesTheCpu) {
  VT_REQUIRE_DEVICE();
  // Odd sizes, a box touching the border, one without erasing, one gray batch below.
  const int64_t B = 3, H = 37, W = 29;
  Tensor px = Tensor::empty({B, H, W, 3}, DType::u8);
  for (int64_t i = 0; i < px.numel(); ++i) px.data<uint8_t>()[i] = static_cast<uint8_t>((i * 37 + i / 7) % 256);
  Tensor er = Tensor::zeros({B, 5}, DType::i64);
  const int64_t rows[3][5] = {{3, 4, 10, 7, 12345}, {0, 0, 0, 0, 1}, {19, 30, 10, 7, -42}};
  for (int b = 0; b < 3; ++b)
    for (int k = 0; k < 5; ++k) er.data<int64_t>()[b * 5 + k] = rows[b][k];
  const data::Normalization norm;
  const auto cpu_out = data::normalize_and_erase(px, er, norm).to_vector();
  const auto gpu_out = data::normalize_and_erase(px.to(kGpu), er.to(kGpu), norm).to(cpu()).to_vector();
  ASSERT_EQ(cpu_out.size(), gpu_out.size());
  int64_t exact = 0;
  for (size_t i = 0; i < cpu_out.size(); ++i) {
    // Normalization is a table built the same way on both sides: equal bits. Noise: CUDA's logf/sinf/cosf
    // differ from glibc's by a few ulps, so |diff| <= 1e-5 on values of magnitude < 6.
    EXPECT_NEAR(gpu_out[i], cpu_out[i], 1e-5) << "value " << i;
    exact += gpu_out[i] == cpu_out[i];
  }
  EXPECT_GT(exact, static_cast<int64_t>(cpu_out.size()) * 8 / 10);
  Tensor gray = Tensor::empty({2, 5, 6, 1}, DType::u8);
  for (int64_t i = 0; i < gray.numel(); ++i) gray.data<uint8_t>()[i] = static_cast<uint8_t>(i * 11);
  EXPECT_EQ(data::normalize_and_erase(gray.to(kGpu), Tensor(), norm).to(cpu()).to_vector(),
            data::normalize_and_erase(gray, Tensor(), norm).to_vector());
}
#endif

}  // namespace
}  // namespace vt::test
