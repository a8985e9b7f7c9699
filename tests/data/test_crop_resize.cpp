// The batched crop + resize (data/crop_resize) on the CPU: samples packed in one buffer at any offset and row
// stride give Pillow's bytes (the golden fixture), mirrored when flipped; bad samples are named. The CUDA kernels
// are compared with this in tests/cuda/test_crop_resize_cuda.cpp.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "data/crop_resize.h"
#include "packed_images.h"
#include "pil_golden.h"
#include "test_util.h"

namespace vt::test {
namespace {

cv::Mat image_of(const Tensor& out, int64_t i) {
  const int S = static_cast<int>(out.size(1));
  return cv::Mat(S, S, CV_8UC3, out.data<uint8_t>() + i * S * S * 3).clone();
}

// How many bytes of two images differ (-1: their sizes differ).
int64_t differing(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return -1;
  int64_t n = 0;
  for (size_t i = 0; i < a.total() * a.elemSize(); ++i) n += a.data[i] != b.data[i];
  return n;
}

TEST(CropResize, PackedSamplesGivePillowsBytesAndFlipMirrorsThem) {
  const auto golden = read_golden();
  ASSERT_EQ(golden.size(), 5u) << "fixture missing";
  const cv::Mat img = golden_input();
  std::vector<uint8_t> buffer;
  auto a = place(buffer, img, 100, img.cols * 3 + 7);  // padded rows
  a.box = {5, 3, 40, 30};
  auto b = place(buffer, img, static_cast<int64_t>(buffer.size()) + 13, img.cols * 3);
  b.box = {10, 10, 12, 9};  // up-scaling
  b.flip = true;
  auto c = a;  // the same image read twice
  c.box = {5, 3, 40, 30};
  c.flip = true;
  const Tensor out = data::crop_resize_batch(to_tensor(buffer), {a, b, c}, 24);
  ASSERT_EQ(out.shape(), (Shape{3, 24, 24, 3}));
  EXPECT_EQ(differing(image_of(out, 0), golden.at("crop_5_3_40_30_to_24")), 0);
  cv::Mat mirrored;
  cv::flip(golden.at("crop_10_10_12_9_to_24"), mirrored, 1);
  EXPECT_EQ(differing(image_of(out, 1), mirrored), 0);
  cv::flip(golden.at("crop_5_3_40_30_to_24"), mirrored, 1);
  EXPECT_EQ(differing(image_of(out, 2), mirrored), 0);
}

TEST(CropResize, BadSamplesAreNamed) {
  const cv::Mat img = golden_input();
  std::vector<uint8_t> buffer;
  auto s = place(buffer, img, 0, img.cols * 3);
  s.box = {0, 0, 61, 47};
  const Tensor images = to_tensor(buffer);
  EXPECT_EQ(data::crop_resize_batch(images, {s}, 8).shape(), (Shape{1, 8, 8, 3}));
  auto outside = s;
  outside.box = {30, 0, 40, 10};
  expect_error(
      [&] {
        data::crop_resize_batch(images, {s, outside}, 8);
      },
      "sample 1: box 40x10 at (30, 0) is not inside its 61x47 image");
  auto past = s;
  past.offset = 5;
  expect_error([&] { data::crop_resize_batch(images, {past}, 8); }, "sample 0: its 61x47 image at byte 5 runs past");
  auto narrow = s;
  narrow.stride = 100;
  expect_error([&] { data::crop_resize_batch(images, {narrow}, 8); }, "rows 100 bytes apart (an RGB row needs 183)");
  expect_error([&] { data::crop_resize_batch(Tensor::zeros({4, 4}), {s}, 8); }, "must be a u8 [bytes] buffer");
  expect_error([&] { data::crop_resize_batch(images, {s}, 0); }, "output size 0");
}

}  // namespace
}  // namespace vt::test
