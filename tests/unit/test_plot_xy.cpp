// engine::plot_xy_log: a log-log chart of named series written as a PNG that libpng reads back.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>

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

}  // namespace
}  // namespace vt::test
