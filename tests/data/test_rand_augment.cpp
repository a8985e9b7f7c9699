// RandAugment: each op against Pillow (fixtures/pil_ops_golden.txt: exact for the pixel ops, close for the
// geometric ones, which use OpenCV's cubic), timm's level functions, config parsing, the draw statistics.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "data/rand_augment.h"
#include "image_writers.h"

namespace vt::test {
namespace {

using data::AugOp;

cv::Mat golden_input() {
  cv::Mat m(47, 61, CV_8UC3);
  for (int y = 0; y < 47; ++y)
    for (int x = 0; x < 61; ++x)
      for (int c = 0; c < 3; ++c)
        m.at<cv::Vec3b>(y, x)[c] = static_cast<uint8_t>((x * 7 + y * 13 + c * 50 + ((x * y) % 17) * 5) % 256);
  return m;
}

struct GoldenOp {
  std::string name;
  double arg;
  cv::Mat out;
};

std::vector<GoldenOp> read_ops() {
  std::ifstream in(std::string(VT_SOURCE_DIR) + "/tests/data/fixtures/pil_ops_golden.txt");
  std::vector<GoldenOp> ops;
  std::string line, hex;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream head(line);
    GoldenOp g;
    head >> g.name >> g.arg;
    std::getline(in, hex);
    g.out = cv::Mat(47, 61, CV_8UC3);
    for (int i = 0; i < 47 * 61 * 3; ++i)
      g.out.data[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    ops.push_back(g);
  }
  return ops;
}

TEST(RandAugment, EachOpMatchesPillow) {
  const std::map<std::string, AugOp> by_name{{"auto_contrast", AugOp::auto_contrast},
                                             {"equalize", AugOp::equalize},
                                             {"invert", AugOp::invert},
                                             {"posterize", AugOp::posterize},
                                             {"solarize", AugOp::solarize},
                                             {"solarize_add", AugOp::solarize_add},
                                             {"color", AugOp::color},
                                             {"contrast", AugOp::contrast},
                                             {"brightness", AugOp::brightness},
                                             {"sharpness", AugOp::sharpness},
                                             {"rotate", AugOp::rotate},
                                             {"shear_x", AugOp::shear_x},
                                             {"shear_y", AugOp::shear_y},
                                             {"translate_x_rel", AugOp::translate_x_rel},
                                             {"translate_y_rel", AugOp::translate_y_rel}};
  const auto golden = read_ops();
  ASSERT_EQ(golden.size(), 15u) << "fixture missing";
  const cv::Mat img = golden_input();
  const data::RandAugmentConfig cfg;
  for (const auto& g : golden) {
    const AugOp op = by_name.at(g.name);
    const cv::Mat out = data::apply_aug_op(img, op, g.arg, cfg);
    const double mean_err = cv::norm(out, g.out, cv::NORM_L1) / (47.0 * 61 * 3);
    const bool geometric = op == AugOp::rotate || op == AugOp::shear_x || op == AugOp::shear_y ||
                           op == AugOp::translate_x_rel || op == AugOp::translate_y_rel;
    if (geometric) {
      // OpenCV's cubic (a = -0.75) vs Pillow's (a = -0.5) on a high-frequency pattern; the geometry and
      // the fill must agree, which a wrong centre, sign or offset would break by tens of levels.
      EXPECT_LT(mean_err, 6.0) << g.name;
    } else if (op == AugOp::sharpness) {
      EXPECT_LE(max_abs_diff_u8(out, g.out), 2) << g.name;  // the 3x3 smoothing rounds differently
    } else {
      EXPECT_EQ(max_abs_diff_u8(out, g.out), 0) << g.name << " mean error " << mean_err;
    }
  }
}

TEST(RandAugment, LevelFunctionsAsTimm) {
  const data::RandAugmentConfig inc;  // rand-m9-mstd0.5-inc1
  EXPECT_DOUBLE_EQ(data::aug_op_argument(AugOp::rotate, 9, false, inc), 27.0);
  EXPECT_DOUBLE_EQ(data::aug_op_argument(AugOp::rotate, 9, true, inc), -27.0);
  EXPECT_DOUBLE_EQ(data::aug_op_argument(AugOp::shear_x, 10, false, inc), 0.3);
  EXPECT_DOUBLE_EQ(data::aug_op_argument(AugOp::translate_y_rel, 10, true, inc), -0.45);
  EXPECT_DOUBLE_EQ(data::aug_op_argument(AugOp::posterize, 9, false, inc), 1);  // 4 - int(3.6)
  EXPECT_DOUBLE_EQ(data::aug_op_argument(AugOp::solarize, 9, false, inc), 26);  // 256 - int(230.4)
  EXPECT_DOUBLE_EQ(data::aug_op_argument(AugOp::solarize_add, 9, false, inc), 99);
  EXPECT_NEAR(data::aug_op_argument(AugOp::color, 9, false, inc), 1.81, 1e-12);
  EXPECT_NEAR(data::aug_op_argument(AugOp::sharpness, 9, true, inc), 0.19, 1e-12);
  data::RandAugmentConfig plain = inc;
  plain.increasing = false;
  EXPECT_NEAR(data::aug_op_argument(AugOp::contrast, 5, false, plain), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(data::aug_op_argument(AugOp::posterize, 9, false, plain), 3);
}

TEST(RandAugment, ParsesTimmConfigStrings) {
  const auto c = data::parse_rand_augment("rand-m9-mstd0.5-inc1");
  EXPECT_EQ(c.num_ops, 2);
  EXPECT_DOUBLE_EQ(c.magnitude, 9);
  EXPECT_DOUBLE_EQ(c.magnitude_std, 0.5);
  EXPECT_TRUE(c.increasing);
  const auto d = data::parse_rand_augment("rand-m7-n3-mstd101-p0.8");
  EXPECT_EQ(d.num_ops, 3);
  EXPECT_TRUE(std::isinf(d.magnitude_std));
  EXPECT_FALSE(d.increasing);
  EXPECT_DOUBLE_EQ(d.prob, 0.8);
  EXPECT_THROW(data::parse_rand_augment("augmix-m5"), Error);
  EXPECT_THROW(data::parse_rand_augment("rand-q3"), Error);
}

TEST(RandAugment, DrawsAreDeterministicAndMostlyChangeTheImage) {
  const cv::Mat img = pattern_rgb(32, 32, 1);
  const auto cfg = data::parse_rand_augment("rand-m9-mstd0.5-inc1");
  int unchanged = 0;
  const int draws = 2000;
  for (int i = 0; i < draws; ++i) {
    data::SampleRng a(1, 0, i), b(1, 0, i);
    const cv::Mat x = data::rand_augment(img, cfg, a), y = data::rand_augment(img, cfg, b);
    ASSERT_EQ(max_abs_diff_u8(x, y), 0);
    unchanged += max_abs_diff_u8(x, img) == 0;
  }
  // Both ops skipped: 0.25; a few applied ops are no-ops on this image (e.g. auto-contrast of a full range).
  EXPECT_GT(unchanged / static_cast<double>(draws), 0.20);
  EXPECT_LT(unchanged / static_cast<double>(draws), 0.40);
}

TEST(RandAugment, ColorJitterFactorsStayInRange) {
  // A flat grey image: brightness scales it, contrast and saturation leave it (its mean and luma are itself).
  const cv::Mat grey(4, 4, CV_8UC3, cv::Scalar(100, 100, 100));
  int lo = 255, hi = 0;
  for (int i = 0; i < 500; ++i) {
    data::SampleRng rng(12, 0, i);
    const int v = data::color_jitter(grey, 0.4, 0.4, 0.4, rng).at<cv::Vec3b>(0, 0)[0];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, 59);  // 100 * 0.6, truncated
  EXPECT_LE(lo, 62);
  EXPECT_LE(hi, 140);
  EXPECT_GE(hi, 137);
  data::SampleRng rng(1, 0, 0);
  EXPECT_EQ(max_abs_diff_u8(data::color_jitter(grey, 0, 0, 0, rng), grey), 0);
}

}  // namespace
}  // namespace vt::test
