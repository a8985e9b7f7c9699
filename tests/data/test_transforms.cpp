// Transforms: Pillow parity (golden bytes from fixtures/make_pil_golden.py), RandomResizedCrop box statistics,
// flip symmetry, RandomErasing area and aspect ranges, normalization.
#include <gtest/gtest.h>

#include <cmath>

#include <opencv2/imgproc.hpp>

#include "data/transforms.h"
#include "image_writers.h"
#include "pil_golden.h"

namespace vt::test {
namespace {

using data::CropBox;
using data::SampleRng;

TEST(Transforms, MatchPillowBitForBit) {
  const auto golden = read_golden();
  ASSERT_EQ(golden.size(), 5u) << "fixture missing";
  const cv::Mat img = golden_input();
  EXPECT_EQ(max_abs_diff_u8(data::eval_resize_crop(img, 24, 0.875), golden.at("eval_24_0.875")), 0);
  EXPECT_EQ(max_abs_diff_u8(data::eval_resize_crop(img, 40, 0.9), golden.at("eval_40_0.9")), 0);
  EXPECT_EQ(max_abs_diff_u8(data::crop_and_resize(img, {5, 3, 40, 30}, 24), golden.at("crop_5_3_40_30_to_24")), 0);
  EXPECT_EQ(max_abs_diff_u8(data::crop_and_resize(img, {10, 10, 12, 9}, 24), golden.at("crop_10_10_12_9_to_24")), 0);
  EXPECT_EQ(
      max_abs_diff_u8(data::pil_resize(img, 20, 33, data::PilFilter::bilinear), golden.at("bilinear_61x47_to_20x33")),
      0);
}

double mean_abs_diff_u8(const cv::Mat& a, const cv::Mat& b) {
  return cv::norm(a, b, cv::NORM_L1) / static_cast<double>(a.total() * a.channels());
}

// The training resize is not bit-exact: float weights, and the vertical pass first, so Pillow's 8-bit clipping
// of bicubic overshoot happens at another stage. On a smooth image it stays within ±2 of Pillow; on the hard
// synthetic pattern (255→0 jumps) only the mean difference is small. Down- and up-scaling, odd sizes, ROIs,
// gray and RGB.
TEST(Transforms, FastResizeIsCloseToPillow) {
  const cv::Mat hard = golden_input();
  cv::Mat smooth;
  cv::GaussianBlur(hard, smooth, cv::Size(7, 7), 2.0);
  for (const auto filter : {data::PilFilter::bicubic, data::PilFilter::bilinear})
    for (const auto& [w, h] : {std::pair{20, 33}, std::pair{61, 5}, std::pair{7, 47}, std::pair{150, 101}}) {
      EXPECT_LE(max_abs_diff_u8(data::fast_resize(smooth, w, h, filter), data::pil_resize(smooth, w, h, filter)), 2)
          << w << "x" << h;
      EXPECT_LT(mean_abs_diff_u8(data::fast_resize(hard, w, h, filter), data::pil_resize(hard, w, h, filter)), 1.0)
          << w << "x" << h;
      cv::Mat gray;
      cv::extractChannel(smooth, gray, 1);
      EXPECT_LE(max_abs_diff_u8(data::fast_resize(gray, w, h, filter), data::pil_resize(gray, w, h, filter)), 2)
          << "gray " << w << "x" << h;
    }
  const data::CropBox box{5, 3, 40, 30};
  EXPECT_LE(max_abs_diff_u8(data::crop_and_fast_resize(smooth, box, 24), data::crop_and_resize(smooth, box, 24)), 2);
}

TEST(Transforms, RandomResizedCropBoxStatistics) {
  const int W = 400, H = 400, draws = 20000;
  double sum_log_aspect = 0, sum_cx = 0, sum_cy = 0, min_frac = 1, max_frac = 0;
  for (int i = 0; i < draws; ++i) {
    SampleRng rng(7, 0, i);
    const CropBox b = data::random_resized_crop_box(W, H, rng);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_LE(b.x + b.width, W);
    ASSERT_LE(b.y + b.height, H);
    const double aspect = static_cast<double>(b.width) / b.height;
    // Rounding w and h to integers can push the ratio slightly past 3/4..4/3.
    ASSERT_GT(aspect, 0.75 * 0.97);
    ASSERT_LT(aspect, 4.0 / 3.0 * 1.03);
    const double frac = static_cast<double>(b.width) * b.height / (W * H);
    min_frac = std::min(min_frac, frac);
    max_frac = std::max(max_frac, frac);
    sum_log_aspect += std::log(aspect);
    sum_cx += b.x + b.width / 2.0;
    sum_cy += b.y + b.height / 2.0;
  }
  EXPECT_GT(min_frac, 0.08 * 0.95);
  EXPECT_LT(min_frac, 0.085);
  EXPECT_GT(max_frac, 0.95);
  EXPECT_NEAR(sum_log_aspect / draws, 0.0, 0.01);  // a square image: log-aspect symmetric
  EXPECT_NEAR(sum_cx / draws, W / 2.0, 2.0);
  EXPECT_NEAR(sum_cy / draws, H / 2.0, 2.0);
  // Deterministic from the stream.
  SampleRng a(3, 1, 2), b(3, 1, 2);
  const CropBox ba = data::random_resized_crop_box(500, 375, a), bb = data::random_resized_crop_box(500, 375, b);
  EXPECT_EQ(ba.x, bb.x);
  EXPECT_EQ(ba.width, bb.width);
}

TEST(Transforms, RandomResizedCropFallsBackToTheCentralCrop) {
  SampleRng rng(1, 0, 0);
  const CropBox b = data::random_resized_crop_box(1000, 10, rng);  // no try fits: the clamped centre crop
  EXPECT_EQ(b.height, 10);
  EXPECT_EQ(b.width, 13);  // round(10 * 4/3)
  EXPECT_EQ(b.x, (1000 - 13) / 2);
  EXPECT_EQ(b.y, 0);
}

TEST(Transforms, FlipIsAMirrorAndAnInvolution) {
  const cv::Mat img = pattern_rgb(13, 7, 2);
  const cv::Mat f = data::hflip(img);
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x) ASSERT_EQ(f.at<cv::Vec3b>(y, x), img.at<cv::Vec3b>(y, img.cols - 1 - x));
  EXPECT_EQ(max_abs_diff_u8(data::hflip(f), img), 0);
}

TEST(Transforms, NormalizeIsTorchvisionToTensorThenNormalize) {
  cv::Mat img(2, 3, CV_8UC3, cv::Scalar(255, 0, 128));
  std::vector<float> out(3 * 2 * 3);
  data::to_normalized_chw(img, {}, out.data());
  EXPECT_FLOAT_EQ(out[0], (1.0f - 0.485f) / 0.229f);
  EXPECT_FLOAT_EQ(out[6], (0.0f - 0.456f) / 0.224f);
  EXPECT_FLOAT_EQ(out[17], (128.0f / 255.0f - 0.406f) / 0.225f);
}

TEST(Transforms, RandomErasingAreaAspectAndProbability) {
  const int C = 3, H = 56, W = 48, draws = 3000;
  data::RandomErasingParams always;
  always.probability = 1.0;
  double sum = 0, sum_sq = 0;
  int64_t count = 0;
  for (int i = 0; i < draws; ++i) {
    std::vector<float> img(C * H * W, 100.0f);
    SampleRng rng(5, 0, i);
    const CropBox b = data::random_erase(img.data(), C, H, W, rng, always);
    ASSERT_GT(b.width, 0);  // with these sizes a try always succeeds early
    const double frac = static_cast<double>(b.width) * b.height / (H * W);
    ASSERT_GT(frac, 0.02 * 0.8);
    ASSERT_LT(frac, 1.0 / 3.0 * 1.2);
    const double aspect = static_cast<double>(b.height) / b.width;
    ASSERT_GT(aspect, 0.3 * 0.7);
    ASSERT_LT(aspect, 1 / 0.3 * 1.4);
    for (int c = 0; c < C; ++c)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          const float v = img[(c * H + y) * W + x];
          const bool inside = x >= b.x && x < b.x + b.width && y >= b.y && y < b.y + b.height;
          if (!inside) {
            ASSERT_EQ(v, 100.0f);
          } else {
            sum += v;
            sum_sq += v * v;
            ++count;
          }
        }
  }
  EXPECT_NEAR(sum / count, 0.0, 0.01);  // pixel mode: N(0, 1) per value
  EXPECT_NEAR(sum_sq / count, 1.0, 0.02);
  int erased = 0;
  for (int i = 0; i < draws; ++i) {
    std::vector<float> img(C * H * W, 0.0f);
    SampleRng rng(6, 0, i);
    erased += data::random_erase(img.data(), C, H, W, rng).width > 0;
  }
  EXPECT_NEAR(erased / static_cast<double>(draws), 0.25, 0.03);
}

}  // namespace
}  // namespace vt::test
