// Decoding: RGB / grayscale / CMYK JPEGs, DCT down-scaling, PNG named .JPEG, corrupt files, label PNGs.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "core/error.h"
#include "data/datasets.h"
#include "data/image_decode.h"
#include "data/jpeg_region.h"
#include "image_writers.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

using data::decode_rgb;
using data::load_rgb;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Decode, RgbJpegRoundTrips) {
  TempDir dir;
  const cv::Mat src = pattern_rgb(40, 30);
  write_jpeg_rgb(dir.file("a.jpg"), src);
  const cv::Mat out = load_rgb(dir.file("a.jpg"));
  ASSERT_EQ(out.type(), CV_8UC3);
  ASSERT_EQ(out.cols, 40);
  ASSERT_EQ(out.rows, 30);
  EXPECT_LE(max_abs_diff_u8(out, src), 12);  // quality 95, 4:4:4: only quantisation error
}

TEST(Decode, DctScalingPicksTheSmallestSufficientScale) {
  TempDir dir;
  write_jpeg_rgb(dir.file("a.jpg"), pattern_rgb(64, 48));
  const auto bytes = data::read_file_bytes(dir.file("a.jpg"));
  const auto info = data::peek_image(bytes, "a.jpg");
  EXPECT_EQ(info.format, data::ImageFormat::jpeg);
  EXPECT_EQ(info.width, 64);
  EXPECT_EQ(info.height, 48);
  cv::Mat m = decode_rgb(bytes, "a.jpg", 16, 12);  // 2/8 = 1/4 exactly
  EXPECT_EQ(m.cols, 16);
  EXPECT_EQ(m.rows, 12);
  m = decode_rgb(bytes, "a.jpg", 17, 1);  // 1/4 gives 16 < 17 → 1/2 (3/8 is not used: slow in libjpeg-turbo)
  EXPECT_EQ(m.cols, 32);
  EXPECT_EQ(m.rows, 24);
  m = decode_rgb(bytes, "a.jpg", 8, 6);  // 1/8
  EXPECT_EQ(m.cols, 8);
  EXPECT_EQ(m.rows, 6);
  m = decode_rgb(bytes, "a.jpg", 100, 100);  // never up-scales
  EXPECT_EQ(m.cols, 64);
  // The down-scaled image is close to a plain area resize of the full one.
  cv::Mat full = decode_rgb(bytes, "a.jpg"), half = decode_rgb(bytes, "a.jpg", 32, 24), ref;
  cv::resize(full, ref, cv::Size(32, 24), 0, 0, cv::INTER_AREA);
  EXPECT_LT(cv::norm(half, ref, cv::NORM_L1) / (32 * 24 * 3), 2.0);  // mean error; edges of the pattern differ more
}

// Crop-only decoding gives the crop of the full decode (at full scale: the same pixels up to the chroma
// upsampling at the region's edges) and, when the crop allows, a 1/2..1/8 scale; truncated and CMYK files are
// left to decode_rgb (empty result).
TEST(Decode, JpegRegionIsTheCropOfTheFullDecode) {
  TempDir dir;
  write_jpeg_rgb(dir.file("a.jpg"), pattern_rgb(203, 151, 3), 90);
  const auto bytes = data::read_file_bytes(dir.file("a.jpg"));
  const cv::Mat full = decode_rgb(bytes, "a.jpg");
  for (const data::CropBox box : {data::CropBox{0, 0, 203, 151}, data::CropBox{37, 21, 90, 77},
                                  data::CropBox{150, 100, 53, 51}, data::CropBox{5, 140, 17, 11}}) {
    const data::JpegRegion r = data::decode_jpeg_region(bytes, "a.jpg", 203, 151, box, 0);
    ASSERT_FALSE(r.pixels.empty());
    ASSERT_EQ(r.crop.width, box.width);
    ASSERT_EQ(r.crop.height, box.height);
    const cv::Mat got = r.pixels(cv::Rect(r.crop.x, r.crop.y, r.crop.width, r.crop.height));
    const cv::Mat want = full(cv::Rect(box.x, box.y, box.width, box.height));
    EXPECT_LE(max_abs_diff_u8(got, want), 8) << box.x << "," << box.y;
    EXPECT_LT(cv::norm(got, want, cv::NORM_L1) / static_cast<double>(got.total() * 3), 0.5) << box.x << "," << box.y;
  }
  // A crop that must keep 24 pixels a side: 200x150 → 1/4 (50x38; 1/8 would give 25x19); 100x80 → 1/2 (50x40).
  const data::JpegRegion quarter = data::decode_jpeg_region(bytes, "a.jpg", 203, 151, {0, 0, 200, 150}, 24);
  EXPECT_EQ(quarter.crop.width, 50);
  EXPECT_EQ(quarter.crop.height, 38);
  const data::JpegRegion half = data::decode_jpeg_region(bytes, "a.jpg", 203, 151, {40, 30, 100, 80}, 24);
  EXPECT_EQ(half.crop.width, 50);
  EXPECT_EQ(half.crop.height, 40);
  EXPECT_GE(half.pixels.cols, half.crop.x + half.crop.width);
  truncate_copy(dir.file("a.jpg"), dir.file("t.jpg"), 2000);
  EXPECT_TRUE(data::decode_jpeg_region(data::read_file_bytes(dir.file("t.jpg")), "t.jpg", 203, 151, {0, 0, 8, 8}, 0)
                  .pixels.empty());
  cv::Mat cmyk(16, 16, CV_8UC4, cv::Scalar(10, 20, 30, 255));
  write_jpeg_cmyk(dir.file("c.jpg"), cmyk);
  EXPECT_TRUE(data::decode_jpeg_region(data::read_file_bytes(dir.file("c.jpg")), "c.jpg", 16, 16, {0, 0, 8, 8}, 0)
                  .pixels.empty());
  std::vector<uint8_t> corrupt(bytes.begin(), bytes.begin() + 120);  // a cut header, then an end marker
  corrupt.push_back(0xFF);
  corrupt.push_back(0xD9);
  EXPECT_NE(error_of([&] { data::decode_jpeg_region(corrupt, "bad.jpg", 203, 151, {0, 0, 203, 151}, 0); }), "");
}

TEST(Decode, GrayscaleJpegBecomesRgb) {
  TempDir dir;
  cv::Mat gray(20, 24, CV_8UC1);
  for (int y = 0; y < gray.rows; ++y)
    for (int x = 0; x < gray.cols; ++x) gray.at<uint8_t>(y, x) = static_cast<uint8_t>(10 * x + y);
  write_jpeg_gray(dir.file("g.JPEG"), gray);
  const cv::Mat out = load_rgb(dir.file("g.JPEG"));
  ASSERT_EQ(out.type(), CV_8UC3);
  std::vector<cv::Mat> ch;
  cv::split(out, ch);
  EXPECT_EQ(max_abs_diff_u8(ch[0], ch[1]), 0);
  EXPECT_EQ(max_abs_diff_u8(ch[0], ch[2]), 0);
  EXPECT_LE(max_abs_diff_u8(ch[0], gray), 6);
}

TEST(Decode, CmykJpegConvertsLikePillow) {
  TempDir dir;
  // Inverted CMYK with K = 255 (no black ink): R = C*K/255 = C, so the expected RGB is the CMY channels.
  const cv::Mat rgb = pattern_rgb(32, 16);
  cv::Mat cmyk(rgb.rows, rgb.cols, CV_8UC4);
  for (int y = 0; y < rgb.rows; ++y)
    for (int x = 0; x < rgb.cols; ++x) {
      const auto& p = rgb.at<cv::Vec3b>(y, x);
      cmyk.at<cv::Vec4b>(y, x) = cv::Vec4b(p[0], p[1], p[2], 255);
    }
  write_jpeg_cmyk(dir.file("c.JPEG"), cmyk);
  const cv::Mat out = load_rgb(dir.file("c.JPEG"));
  ASSERT_EQ(out.type(), CV_8UC3);
  EXPECT_LE(max_abs_diff_u8(out, rgb), 12);
  // With K = 128 every channel is about halved.
  for (int y = 0; y < cmyk.rows; ++y)
    for (int x = 0; x < cmyk.cols; ++x) cmyk.at<cv::Vec4b>(y, x)[3] = 128;
  write_jpeg_cmyk(dir.file("k.JPEG"), cmyk);
  cv::Mat expected;
  rgb.convertTo(expected, CV_8UC3, 128.0 / 255.0);
  EXPECT_LE(max_abs_diff_u8(load_rgb(dir.file("k.JPEG")), expected), 12);
}

TEST(Decode, PngNamedJpegIsDecodedByContent) {
  TempDir dir;
  const cv::Mat src = pattern_rgb(17, 9);
  write_png(dir.file("n01440764_1.JPEG"), src);
  const auto bytes = data::read_file_bytes(dir.file("n01440764_1.JPEG"));
  EXPECT_EQ(data::peek_image(bytes, "x").format, data::ImageFormat::png);
  EXPECT_EQ(max_abs_diff_u8(load_rgb(dir.file("n01440764_1.JPEG")), src), 0);
  // A gray PNG becomes RGB too.
  cv::Mat gray(5, 7, CV_8UC1, cv::Scalar(77));
  write_png(dir.file("g.png"), gray);
  const cv::Mat out = load_rgb(dir.file("g.png"));
  EXPECT_EQ(out.type(), CV_8UC3);
  EXPECT_EQ(out.at<cv::Vec3b>(4, 6), cv::Vec3b(77, 77, 77));
}

TEST(Decode, CorruptFilesNameTheirPath) {
  TempDir dir;
  write_jpeg_rgb(dir.file("full.jpg"), pattern_rgb(64, 64));
  truncate_copy(dir.file("full.jpg"), dir.file("truncated.jpg"), 400);
  EXPECT_NE(error_of([&] { load_rgb(dir.file("truncated.jpg")); }).find("truncated.jpg"), std::string::npos);
  write_bytes(dir.file("junk.JPEG"), "this is not an image at all");
  const std::string junk = error_of([&] { load_rgb(dir.file("junk.JPEG")); });
  EXPECT_NE(junk.find("junk.JPEG"), std::string::npos) << junk;
  EXPECT_NE(junk.find("not a JPEG or PNG"), std::string::npos) << junk;
  write_bytes(dir.file("empty.jpg"), "");
  EXPECT_NE(error_of([&] { load_rgb(dir.file("empty.jpg")); }).find("empty.jpg"), std::string::npos);
  write_png(dir.file("p.png"), pattern_rgb(30, 30));
  truncate_copy(dir.file("p.png"), dir.file("cut.png"), 100);
  EXPECT_NE(error_of([&] { load_rgb(dir.file("cut.png")); }).find("cut.png"), std::string::npos);
  EXPECT_NE(error_of([&] { load_rgb(dir.file("missing.jpg")); }).find("missing.jpg"), std::string::npos);
}

TEST(Decode, AValidJpegDecodesAfterACorruptOneOnTheSameThread) {
  TempDir dir;
  write_jpeg_rgb(dir.file("full.jpg"), pattern_rgb(64, 64));
  truncate_copy(dir.file("full.jpg"), dir.file("truncated.jpg"), 400);
  EXPECT_ANY_THROW(load_rgb(dir.file("truncated.jpg")));
  EXPECT_EQ(load_rgb(dir.file("full.jpg")).cols, 64);  // the thread's TurboJPEG handle was replaced
}

TEST(Decode, LabelPngKeepsRawValuesAndReducesZero) {
  TempDir dir;
  cv::Mat label(11, 14, CV_8UC1);
  for (int i = 0; i < label.rows * label.cols; ++i) label.data[i] = static_cast<uint8_t>(i % 151);
  write_png(dir.file("ADE_train_00000001.png"), label);
  cv::Mat out = data::load_label_png(dir.file("ADE_train_00000001.png"));
  ASSERT_EQ(out.type(), CV_8UC1);
  EXPECT_EQ(max_abs_diff_u8(out, label), 0);
  data::reduce_zero_label(out);
  for (int i = 0; i < label.rows * label.cols; ++i) {
    const int v = label.data[i];
    EXPECT_EQ(out.data[i], v == 0 ? 255 : v - 1) << i;
  }
  write_png(dir.file("rgb.png"), pattern_rgb(4, 4));
  EXPECT_NE(error_of([&] { data::load_label_png(dir.file("rgb.png")); }).find("single-channel"), std::string::npos);
}

}  // namespace
}  // namespace vt::test
