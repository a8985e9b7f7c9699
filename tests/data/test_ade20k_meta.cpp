// ADE20K's class names and palette (mmseg order), and the mean/std parameter of the segmentation tensors.
#include <gtest/gtest.h>

#include <set>

#include "data/ade20k_meta.h"
#include "data/datasets.h"
#include "data/seg_transforms.h"

namespace vt::test {
namespace {

TEST(Ade20kMeta, NamesAndPaletteInMmsegOrder) {
  const auto& names = data::ade20k_class_names();
  ASSERT_EQ(names.size(), static_cast<size_t>(data::kAde20kClasses));
  EXPECT_EQ(names[0], "wall");
  EXPECT_EQ(names[7], "bed");  // mmseg spells it 'bed ' (trailing space)
  EXPECT_EQ(names[12], "person");
  EXPECT_EQ(names[149], "flag");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  const auto& pal = data::ade20k_palette();
  EXPECT_EQ(pal[0], (std::array<uint8_t, 3>{120, 120, 120}));
  EXPECT_EQ(pal[2], (std::array<uint8_t, 3>{6, 230, 230}));
  EXPECT_EQ(pal[149], (std::array<uint8_t, 3>{92, 0, 255}));
  EXPECT_EQ(data::seg_class_colour(255), (std::array<uint8_t, 3>{0, 0, 0}));  // ignore: black
  EXPECT_EQ(data::seg_class_colour(2), pal[2]);
}

TEST(Ade20kMeta, SegTensorsTakeMeanAndStd) {
  cv::Mat img(1, 1, CV_8UC3, cv::Scalar(200, 100, 0)), label(1, 1, CV_8UC1, cv::Scalar(3));
  std::vector<float> x(3 * 4);
  std::vector<int64_t> y(4);
  data::Normalization half;
  half.mean = {0.5f, 0.5f, 0.5f};
  half.std = {0.5f, 0.5f, 0.5f};
  data::seg_to_tensors(img, label, 2, x.data(), y.data(), half);  // Segmenter: (v − 127.5) / 127.5
  EXPECT_NEAR(x[0], (200 - 127.5) / 127.5, 1e-6);
  EXPECT_NEAR(x[4], (100 - 127.5) / 127.5, 1e-6);
  EXPECT_NEAR(x[8], -1.0, 1e-6);
  data::seg_to_tensors(img, label, 2, x.data(), y.data());  // default: ImageNet's, mmseg's 0-255 constants
  EXPECT_FLOAT_EQ(x[0], (200 - 123.675f) / 58.395f);
  EXPECT_FLOAT_EQ(x[8], (0 - 103.53f) / 57.375f);
}

}  // namespace
}  // namespace vt::test
