// Segmentation transforms (mmseg semantics): rescale sizes, joint image/label geometry, cat_max_ratio,
// photometric distortion ranges, normalize + pad with the ignore label.
#include <gtest/gtest.h>

#include "data/seg_transforms.h"
#include "image_writers.h"

namespace vt::test {
namespace {

TEST(SegTransforms, RescaleSizeAsMmcv) {
  EXPECT_EQ(data::rescale_size({683, 512}, 2048, 512), cv::Size(683, 512));
  EXPECT_EQ(data::rescale_size({400, 300}, 2048, 512), cv::Size(683, 512));    // 400·512/300 = 682.67 → 683
  EXPECT_EQ(data::rescale_size({3000, 500}, 2048, 512), cv::Size(2048, 341));  // the long side limits
  EXPECT_EQ(data::seg_eval_resize(pattern_rgb(400, 300)).size(), cv::Size(683, 512));
}

// The label encodes the column and row, so the geometry applied to it can be read back from the image.
TEST(SegTransforms, ImageAndLabelStayAligned) {
  const int W = 120, H = 90;
  data::SegTrainConfig cfg;
  cfg.scale_long = 400;
  cfg.scale_short = 100;
  cfg.crop = 64;
  cfg.photometric = false;
  cfg.cat_max_ratio = 1.0;
  int flips = 0;
  for (int i = 0; i < 200; ++i) {
    cv::Mat img(H, W, CV_8UC3), label(H, W, CV_8UC1);
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        label.at<uint8_t>(y, x) = static_cast<uint8_t>(x < W / 2 ? 10 : 20);
        img.at<cv::Vec3b>(y, x) = x < W / 2 ? cv::Vec3b(200, 0, 0) : cv::Vec3b(0, 200, 0);
      }
    data::SampleRng rng(3, 0, i);
    data::seg_train_augment(img, label, cfg, rng);
    ASSERT_EQ(img.size(), label.size());
    ASSERT_LE(img.cols, 64);
    ASSERT_LE(img.rows, 64);
    // OpenCV's nearest (as mmcv's) is not centre-aligned like bilinear: allow 2 columns at the edge.
    auto label_near = [&](int y, int x, uint8_t want) {
      for (int dx = -2; dx <= 2; ++dx)
        if (x + dx >= 0 && x + dx < label.cols && label.at<uint8_t>(y, x + dx) == want) return true;
      return false;
    };
    for (int y = 0; y < img.rows; ++y)
      for (int x = 0; x < img.cols; ++x) {
        const uint8_t l = label.at<uint8_t>(y, x);
        ASSERT_TRUE(l == 10 || l == 20);  // nearest: no interpolated labels
        const cv::Vec3b p = img.at<cv::Vec3b>(y, x);
        if (p[0] > 190) {
          ASSERT_TRUE(label_near(y, x, 10));
        }
        if (p[1] > 190) {
          ASSERT_TRUE(label_near(y, x, 20));
        }
      }
    flips += label.at<uint8_t>(0, 0) == 20 && label.at<uint8_t>(0, label.cols - 1) == 10;
  }
  EXPECT_GT(flips, 40);
  EXPECT_LT(flips, 160);
}

TEST(SegTransforms, CropAvoidsSingleClassBoxesWhenItCan) {
  // Class 1 fills the image except a 20-wide column of class 2 on the right; ignore label in a band.
  cv::Mat label(100, 200, CV_8UC1, cv::Scalar(1));
  label(cv::Rect(180, 0, 20, 100)).setTo(2);
  label(cv::Rect(0, 0, 200, 10)).setTo(data::kIgnoreLabel);
  int accepted = 0;
  for (int i = 0; i < 200; ++i) {
    data::SampleRng rng(9, 0, i);
    const cv::Rect b = data::seg_random_crop_box(label, 50, 0.75, rng);
    ASSERT_EQ(b.width, 50);
    ASSERT_EQ(b.height, 50);
    accepted += b.x >= 143;  // the class-2 column covers > 25% of the box
  }
  // Offsets 143..150 of 0..150 qualify: 8/151 per try, so 11 tries accept about 1 - (143/151)^10 + ... = 45%
  // of the boxes, against 5% without the ratio test.
  EXPECT_NEAR(accepted / 200.0, 0.45, 0.1);
}

TEST(SegTransforms, PhotometricDistortionKeepsSizeAndChangesColours) {
  const cv::Mat base = pattern_rgb(32, 24, 3);
  int changed = 0;
  for (int i = 0; i < 100; ++i) {
    cv::Mat img = base.clone();
    data::SampleRng rng(1, 2, i);
    data::photometric_distortion(img, rng);
    ASSERT_EQ(img.size(), base.size());
    changed += max_abs_diff_u8(img, base) > 0;
  }
  EXPECT_GT(changed, 85);  // unchanged only when all four coins say no: 1/16
}

TEST(SegTransforms, NormalizeAndPad) {
  cv::Mat img(2, 3, CV_8UC3, cv::Scalar(123, 116, 104)), label(2, 3, CV_8UC1, cv::Scalar(7));
  std::vector<float> x(3 * 16);
  std::vector<int64_t> y(16);
  data::seg_to_tensors(img, label, 4, x.data(), y.data());
  EXPECT_NEAR(x[0], (123 - 123.675) / 58.395, 1e-6);
  EXPECT_FLOAT_EQ(x[3], 0.0f);  // padding column
  EXPECT_EQ(y[0], 7);
  EXPECT_EQ(y[3], 255);
  EXPECT_EQ(y[15], 255);
}

}  // namespace
}  // namespace vt::test
