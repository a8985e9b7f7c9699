// The device crop + resize (data/crop_resize_cuda) against the CPU path (pil_resize per sample, itself checked
// against Pillow's bytes in tests/data/test_crop_resize.cpp): the same bytes for a batch of photos-like and noise
// images of many sizes, RandomResizedCrop-like boxes that shrink up to 9x and grow up to 224x, both filters,
// flips, padded rows and unaligned offsets.
#include <gtest/gtest.h>

#include <random>

#include "cuda/device_test_util.h"
#include "data/crop_resize.h"
#include "data/image_writers.h"
#include "data/packed_images.h"

namespace vt::test {
namespace {

cv::Mat noise_rgb(int width, int height, std::mt19937& rng) {
  cv::Mat m(height, width, CV_8UC3);
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t i = 0; i < m.total() * 3; ++i) m.data[i] = static_cast<uint8_t>(byte(rng));
  return m;
}

struct Batch {
  std::vector<uint8_t> bytes;
  std::vector<data::CropResizeSample> samples;
};

Batch random_batch(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  Batch b;
  for (int i = 0; i < n; ++i) {
    const int w = std::uniform_int_distribution<int>(1, 640)(rng), h = std::uniform_int_distribution<int>(1, 560)(rng);
    const cv::Mat img = i % 3 == 0 ? noise_rgb(w, h, rng) : pattern_rgb(w, h, i);
    const int pad = std::uniform_int_distribution<int>(0, 9)(rng);
    auto s = place(b.bytes, img, static_cast<int64_t>(b.bytes.size()) + pad, 3 * w + pad);
    const int bw = std::uniform_int_distribution<int>(1, w)(rng), bh = std::uniform_int_distribution<int>(1, h)(rng);
    s.box = {std::uniform_int_distribution<int>(0, w - bw)(rng), std::uniform_int_distribution<int>(0, h - bh)(rng), bw,
             bh};
    s.flip = rng() % 2;
    b.samples.push_back(s);
  }
  // A large photo shrunk ~9x, whole and flipped, and a 1x1 box grown to the output size.
  const cv::Mat big = pattern_rgb(2000, 1500, 7);
  auto s = place(b.bytes, big, static_cast<int64_t>(b.bytes.size()) + 3, 3 * 2000);
  s.box = {0, 0, 2000, 1500};
  s.flip = true;
  b.samples.push_back(s);
  s.box = {1999, 1499, 1, 1};
  s.flip = false;
  b.samples.push_back(s);
  return b;
}

TEST(CropResizeCuda, SameBytesAsTheCpuPath) {
  VT_REQUIRE_DEVICE();
  const Batch b = random_batch(40, 11);
  const Tensor host = to_tensor(b.bytes), device = host.to(kGpu);
  for (const int size : {224, 24})
    for (const auto filter : {data::PilFilter::bicubic, data::PilFilter::bilinear}) {
      const Tensor want = data::crop_resize_batch(host, b.samples, size, filter);
      const Tensor got = data::crop_resize_batch(device, b.samples, size, filter);
      ASSERT_EQ(got.device(), kGpu);
      const Tensor got_host = got.to(cpu());
      const uint8_t *x = want.data<uint8_t>(), *y = got_host.data<uint8_t>();
      int64_t differ = 0, first = -1;
      for (int64_t i = 0; i < want.numel(); ++i)
        if (x[i] != y[i]) differ += 1, first = first < 0 ? i : first;
      EXPECT_EQ(differ, 0) << "size " << size << (filter == data::PilFilter::bicubic ? " bicubic" : " bilinear")
                           << ": first difference in sample " << (first < 0 ? -1 : first / (size * size * 3));
    }
}

TEST(CropResizeCuda, AnEmptyBatchGivesAnEmptyTensorOnTheDevice) {
  VT_REQUIRE_DEVICE();
  const Tensor device = Tensor::zeros({16}, DType::u8).to(kGpu);
  const Tensor out = data::crop_resize_batch(device, {}, 8);
  EXPECT_EQ(out.shape(), (Shape{0, 8, 8, 3}));
  EXPECT_EQ(out.device(), kGpu);
}

}  // namespace
}  // namespace vt::test
