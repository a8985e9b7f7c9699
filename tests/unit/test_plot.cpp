// vitrain plot: metrics.jsonl lines → PNG charts that libpng reads back.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstdio>

#include "test_util.h"
#include "engine/plot.h"
#include "io/metrics.h"
#include "io_temp_dir.h"

namespace vt::test {
namespace {

std::pair<int, int> png_size(const std::string& path) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path.c_str())) return {-1, -1};
  std::pair<int, int> wh{static_cast<int>(img.width), static_cast<int>(img.height)};
  png_image_free(&img);
  return wh;
}

TEST(Plot, MetricsLinesBecomeThreePngCharts) {
  TempDir dir;
  {
    io::MetricsLog log(dir.file("metrics.jsonl"));
    for (int s = 1; s <= 20; ++s)
      log.log({{"epoch", 1.0 + (s - 1) / 10}, {"step", static_cast<double>(s)}, {"train_loss", 2.0 / s},
               {"lr", 1e-3 * s / 20}});
    log.log({{"epoch", 1}, {"step", 10}, {"test_top1", 50.5}, {"test_loss", 1.2}, {"ema_top1", 48.0}});
    log.log({{"epoch", 2}, {"step", 20}, {"test_top1", 61.0}, {"test_loss", std::nan("")}, {"ema_top1", 59.0}},
            {{"note", "a \"quoted\" string"}});
  }
  const auto rows = engine::read_metrics(dir.file("metrics.jsonl"));
  ASSERT_EQ(rows.size(), 22u);
  EXPECT_DOUBLE_EQ(rows[3].at("train_loss"), 0.5);
  EXPECT_EQ(rows[21].count("test_loss"), 0u);  // null is skipped
  const auto files = engine::plot_metrics(rows, dir.file("plots"));
  ASSERT_EQ(files.size(), 3u);
  for (const auto& f : files) EXPECT_EQ(png_size(f), std::make_pair(800, 420)) << f;

  // A segmentation run's evaluations draw miou.png instead of top1.png.
  {
    io::MetricsLog seg(dir.file("seg.jsonl"));
    seg.log({{"epoch", 1}, {"step", 5}, {"train_loss", 3.0}, {"lr", 1e-3}});
    seg.log({{"epoch", 2}, {"step", 10}, {"miou", 20.5}, {"macc", 30.0}, {"aacc", 60.0}});
    seg.log({{"epoch", 4}, {"step", 20}, {"miou", 25.0}, {"macc", 33.0}, {"aacc", 64.0}});
  }
  const auto seg_files = engine::plot_metrics(engine::read_metrics(dir.file("seg.jsonl")), dir.file("seg_plots"));
  ASSERT_EQ(seg_files.size(), 3u);
  EXPECT_NE(seg_files.back().find("miou.png"), std::string::npos) << seg_files.back();
  EXPECT_EQ(png_size(seg_files.back()), std::make_pair(800, 420));

  write_bytes(dir.file("bad.jsonl"), "{\"a\": 1}\nnot json\n");
  expect_error([&] { engine::read_metrics(dir.file("bad.jsonl")); }, "bad.jsonl:2");
}

}  // namespace
}  // namespace vt::test
