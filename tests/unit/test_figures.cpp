// src/figures: run charts from metrics rows, line and dot charts, tick labels and the figure formats, read back as
// files (PNG through libpng, SVG and PDF by their first bytes) with pixel checks where they are cheap.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "figures/chart.h"
#include "figures/raster.h"
#include "figures/run_plots.h"
#include "figures/ticks.h"
#include "io/metrics.h"
#include "io_temp_dir.h"
#include "test_util.h"

namespace vt::test {
namespace {

struct Png {
  int w = -1, h = -1;
  std::vector<uint8_t> px;  // RGB
  bool near(int x, int y, int r, int g, int b, int tol = 12) const {
    const uint8_t* p = &px[(static_cast<size_t>(y) * w + x) * 3];
    return std::abs(p[0] - r) <= tol && std::abs(p[1] - g) <= tol && std::abs(p[2] - b) <= tol;
  }
};

Png read_png(const std::string& path) {
  Png out;
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path.c_str())) return out;
  img.format = PNG_FORMAT_RGB;
  out.px.resize(PNG_IMAGE_SIZE(img));
  if (png_image_finish_read(&img, nullptr, out.px.data(), 0, nullptr)) out.w = img.width, out.h = img.height;
  return out;
}

// Pixels of `png` within the rectangle close to the colour.
int count_colour(const Png& png, int r, int g, int b, int x0 = 0, int y0 = 0, int x1 = -1, int y1 = -1) {
  if (x1 < 0) x1 = png.w;
  if (y1 < 0) y1 = png.h;
  int n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) n += png.near(x, y, r, g, b);
  return n;
}

TEST(Figures, MetricsRowsBecomeLossLrAndAccuracyChartsAsPngAndSvg) {
  TempDir dir;
  {
    io::MetricsLog log(dir.file("metrics.jsonl"));
    for (int s = 1; s <= 20; ++s)
      log.log({{"epoch", 1.0 + (s - 1) / 10},
               {"step", static_cast<double>(s)},
               {"train_loss", 2.0 / s},
               {"lr", 1e-3 * s / 20}});
    log.log({{"epoch", 1}, {"step", 10}, {"test_top1", 50.5}, {"test_loss", 1.2}, {"ema_top1", 48.0}});
    log.log({{"epoch", 2}, {"step", 20}, {"test_top1", 61.0}, {"test_loss", std::nan("")}, {"ema_top1", 59.0}},
            {{"note", "a \"quoted\" string"}});
  }
  const auto rows = io::read_metrics(dir.file("metrics.jsonl"));
  ASSERT_EQ(rows.size(), 22u);
  EXPECT_DOUBLE_EQ(rows[3].at("train_loss"), 0.5);
  EXPECT_EQ(rows[21].count("test_loss"), 0u);  // null is skipped
  EXPECT_DOUBLE_EQ(figures::updates_per_epoch(rows), 10);
  EXPECT_DOUBLE_EQ(figures::epoch_of(rows[14], 10), 1.5);  // step 15 of 10 per epoch
  const auto files = figures::plot_metrics(rows, dir.file("plots"));
  ASSERT_EQ(files.size(), 6u);
  for (size_t i = 0; i < files.size(); i += 2) {
    EXPECT_EQ(files[i].substr(files[i].size() - 4), ".png");
    const Png png = read_png(files[i]);
    EXPECT_EQ(png.w, 820) << files[i];
    EXPECT_EQ(png.h, 480) << files[i];
    const std::string svg = read_bytes(files[i + 1]);
    EXPECT_NE(svg.find("<svg"), std::string::npos) << files[i + 1];
    EXPECT_GT(svg.size(), 2000u) << files[i + 1];
  }
  EXPECT_NE(files[0].find("loss.png"), std::string::npos);
  EXPECT_NE(files[4].find("accuracy.png"), std::string::npos);
  // The first series is drawn in the palette's blue, the second (test loss) in orange, inside the plot area.
  const Png loss = read_png(files[0]);
  EXPECT_GT(count_colour(loss, 31, 119, 180, 80, 50, 790, 440), 100);
  EXPECT_GT(count_colour(loss, 255, 127, 14, 80, 50, 790, 440), 20);
  // Accuracy: top-1 rises from 50.5 to 61 from epoch 1 to 2: its blue markers' mean height falls left to right.
  const Png acc = read_png(files[4]);
  double left_y = 0, right_y = 0;
  int left_n = 0, right_n = 0;
  for (int y = 40; y < 440; ++y)
    for (int x = 80; x < 790; ++x)
      if (acc.near(x, y, 31, 119, 180, 4)) (x < 430 ? (left_y += y, ++left_n) : (right_y += y, ++right_n));
  ASSERT_GT(left_n, 0);
  ASSERT_GT(right_n, 0);
  EXPECT_GT(left_y / left_n, right_y / right_n);

  // A segmentation run's evaluations draw miou instead of accuracy.
  {
    io::MetricsLog seg(dir.file("seg.jsonl"));
    seg.log({{"epoch", 1}, {"step", 5}, {"train_loss", 3.0}, {"lr", 1e-3}});
    seg.log({{"epoch", 2}, {"step", 10}, {"miou", 20.5}, {"macc", 30.0}, {"aacc", 60.0}});
    seg.log({{"epoch", 4}, {"step", 20}, {"miou", 25.0}, {"macc", 33.0}, {"aacc", 64.0}});
  }
  const auto seg_files = figures::plot_metrics(io::read_metrics(dir.file("seg.jsonl")), dir.file("seg_plots"));
  ASSERT_EQ(seg_files.size(), 6u);
  EXPECT_NE(seg_files[4].find("miou.png"), std::string::npos) << seg_files[4];
  EXPECT_EQ(read_png(seg_files[4]).w, 820);

  write_bytes(dir.file("bad.jsonl"), "{\"a\": 1}\nnot json\n");
  expect_error([&] { io::read_metrics(dir.file("bad.jsonl")); }, "bad.jsonl:2");
}

TEST(Figures, LogLogSeriesWithGapsAndNothingToDrawIsAnError) {
  TempDir dir;
  figures::ChartSpec spec{"Figure 5", "sequence length N (tokens)", "throughput (samples/s)", true, true, 900, 560};
  const auto fig =
      figures::draw_chart({{"ours mita", {{1024, 5e4}, {4096, 2e4}, {16384, 6e3}, {1048576, 40}}, true},
                           {"ours dense", {{1024, 3e4}, {4096, std::nan("")}, {16384, 600}, {1048576, 0.3}}, true},
                           {"torch sdpa", {{1024, 2.5e4}}, true}},
                          spec, "fig5");
  const auto paths = figures::save_figure(*fig, dir.file("fig5.png"));
  ASSERT_EQ(paths.size(), 2u);
  const Png png = read_png(paths[0]);
  EXPECT_EQ(png.w, 900);
  EXPECT_EQ(png.h, 560);
  EXPECT_GT(count_colour(png, 44, 160, 44), 10);  // the third series' marker (green)
  fig->save(dir.file("fig5.pdf"));
  EXPECT_EQ(read_bytes(dir.file("fig5.pdf")).substr(0, 5), "%PDF-");
  expect_error([&] { fig->save(dir.file("fig5.bmp")); }, "unknown figure format '.bmp'");
  expect_error(
      [&] {
        figures::draw_chart({{"empty", {{0, 1}, {-1, 5}}}}, spec, "x.png");
      },
      "x.png: no point to draw on log axes");
}

TEST(Figures, DotMarkersSitInValueOrderWithTheReferenceLine) {
  TempDir dir;
  const auto fig = figures::draw_dots({{"mita", 87.68, 0.37}, {"mita dwc", 91.51, 0.29}, {"linear", 86.56, 0.47}},
                                      "proxy study", "best test top-1 (%)", 87.68, "study");
  fig->save(dir.file("study.png"));
  const Png png = read_png(dir.file("study.png"));
  ASSERT_EQ(png.w, 820);
  // Rows are 26 px below a 44 px title band; a row's dot (9 px) is the only blue 3 px above the row's centre.
  std::vector<double> centre;
  for (int row = 0; row < 3; ++row) {
    const int y = 44 + 26 * row + 13 - 3;
    double sum = 0;
    int n = 0;
    for (int x = 0; x < png.w; ++x)
      if (png.near(x, y, 31, 119, 180, 4)) sum += x, ++n;
    ASSERT_GT(n, 0) << "no marker in row " << row;
    centre.push_back(sum / n);
  }
  EXPECT_LT(centre[2], centre[0]);  // linear < mita < mita dwc
  EXPECT_LT(centre[0], centre[1]);
  const int cx = static_cast<int>(std::lround(centre[0]));
  EXPECT_GT(count_colour(png, 214, 39, 40, cx - 5, 44, cx + 6, png.h - 40), 20);  // dashed red at mita's value
  expect_error([&] { figures::draw_dots({}, "", "", std::nan(""), "x.png"); }, "no rows");
  expect_error([&] { figures::draw_dots({{"a", std::nan(""), 0}}, "", "", std::nan(""), "x.png"); }, "no finite value");
}

TEST(Figures, TickLabelsAreWrittenAsPeopleReadThem) {
  using V = std::vector<std::string>;
  EXPECT_EQ(figures::tick_labels({0, 2e-4, 4e-4, 6e-4, 8e-4, 1e-3}),
            (V{"0", "2×10⁻⁴", "4×10⁻⁴", "6×10⁻⁴", "8×10⁻⁴", "10⁻³"}));
  EXPECT_EQ(figures::tick_labels({0.5, 1.0, 1.5}), (V{"0.5", "1.0", "1.5"}));
  EXPECT_EQ(figures::tick_labels({-20, 0, 20, 40}), (V{"−20", "0", "20", "40"}));
  EXPECT_EQ(figures::tick_labels({1e5, 1.5e5, 2e5}), (V{"10⁵", "1.5×10⁵", "2.0×10⁵"}));
  EXPECT_EQ(figures::decade_label(0), "1");
  EXPECT_EQ(figures::decade_label(1), "10");
  EXPECT_EQ(figures::decade_label(5), "10⁵");
  EXPECT_EQ(figures::decade_label(-2), "10⁻²");
  EXPECT_EQ(figures::linear_ticks(0, 10, 6), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(figures::value_label(84.634, 2), "84.63");
  EXPECT_EQ(figures::value_label(std::nan(""), 2), "–");
}

TEST(Figures, RasterImagesSaveAtTheirSize) {
  TempDir dir;
  figures::RgbImage img(7, 5, {10, 20, 30});
  img.set(3, 2, {200, 100, 50});
  img.save(dir.file("r.png"));
  const Png png = read_png(dir.file("r.png"));
  ASSERT_EQ(png.w, 7);
  ASSERT_EQ(png.h, 5);
  EXPECT_TRUE(png.near(3, 2, 200, 100, 50, 0));
  EXPECT_TRUE(png.near(0, 0, 10, 20, 30, 0));
}

}  // namespace
}  // namespace vt::test
