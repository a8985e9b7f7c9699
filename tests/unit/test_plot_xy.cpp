// engine::plot_xy_log: a log-log chart of named series written as a PNG that libpng reads back; engine::plot_dots:
// a dot chart with error bars whose markers sit in value order.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <vector>

#include "engine/plot.h"
#include "io_temp_dir.h"
#include "test_util.h"

namespace vt::test {
namespace {

TEST(PlotXY, LogLogSeriesWithGapsBecomeAPng) {
  TempDir dir;
  const std::string path = dir.file("fig5.png");
  engine::plot_xy_log({{"ours mita", {{1024, 5e4}, {4096, 2e4}, {16384, 6e3}, {1048576, 40}}},
                       {"ours dense", {{1024, 3e4}, {4096, std::nan("")}, {16384, 600}, {1048576, 0.3}}},
                       {"torch sdpa", {{1024, 2.5e4}}}},
                      path, "Figure 5: samples/s vs N");
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&img, path.c_str()));
  EXPECT_EQ(img.width, 900u);
  EXPECT_EQ(img.height, 560u);
  png_image_free(&img);
}

TEST(PlotXY, NothingPositiveToDrawIsAnError) {
  TempDir dir;
  expect_error([&] { engine::plot_xy_log({{"empty", {{0, 1}, {-1, 5}}}}, dir.file("x.png")); },
               "no positive finite point");
}

// Reads an RGB PNG into rows of pixels.
std::vector<uint8_t> read_rgb(const std::string& path, png_uint_32& w, png_uint_32& h) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  EXPECT_TRUE(png_image_begin_read_from_file(&img, path.c_str()));
  img.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> px(PNG_IMAGE_SIZE(img));
  EXPECT_TRUE(png_image_finish_read(&img, nullptr, px.data(), 0, nullptr));
  w = img.width, h = img.height;
  return px;
}

TEST(PlotDots, MarkersSitInValueOrderWithTheReferenceLine) {
  TempDir dir;
  const std::string path = dir.file("study.png");
  engine::plot_dots({{"mita", 87.68, 0.37}, {"mita dwc", 91.51, 0.29}, {"linear", 86.56, 0.47}}, path,
                    "proxy study", 87.68);
  png_uint_32 w = 0, h = 0;
  const std::vector<uint8_t> px = read_rgb(path, w, h);
  ASSERT_EQ(w, 900u);
  ASSERT_EQ(h, 40u + 40u + 3u * 26u);
  auto is = [&](png_uint_32 x, png_uint_32 y, int r, int g, int b) {
    const uint8_t* p = &px[(y * w + x) * 3];
    return p[0] == r && p[1] == g && p[2] == b;
  };
  // Each marker is 9 px tall; 3 px above a row's centre only the marker is drawn: find its centre column.
  std::vector<double> centre;
  for (png_uint_32 row = 0; row < 3; ++row) {
    const png_uint_32 y = 40 + 26 * row + 13 - 3;
    double sum = 0;
    int n = 0;
    for (png_uint_32 x = 250; x < w; ++x)
      if (is(x, y, 31, 119, 180)) sum += x, ++n;
    ASSERT_GT(n, 0) << "no marker in row " << row;
    centre.push_back(sum / n);
  }
  EXPECT_LT(centre[2], centre[0]);  // linear < mita < mita dwc
  EXPECT_LT(centre[0], centre[1]);
  int red = 0;  // the reference (= mita's value) is dashed red through the marker's column
  for (png_uint_32 y = 40; y < h - 40; ++y)
    for (int dx = -5; dx <= 5; ++dx) red += is(static_cast<png_uint_32>(std::lround(centre[0])) + dx, y, 214, 39, 40);
  EXPECT_GT(red, 20);
}

TEST(PlotDots, NoRowsOrNoFiniteValueIsAnError) {
  TempDir dir;
  expect_error([&] { engine::plot_dots({}, dir.file("x.png")); }, "no rows");
  expect_error([&] { engine::plot_dots({{"a", std::nan(""), 0}}, dir.file("x.png")); }, "no finite value");
}

}  // namespace
}  // namespace vt::test
