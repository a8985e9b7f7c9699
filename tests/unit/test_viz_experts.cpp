// The pictures of `vitrain viz experts` and of the Appendix C heat maps: the routing they draw is the routing
// tap's, the selection map's cells carry the counts, and the PNGs have the documented sizes.
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <filesystem>
#include <string>

#include "autograd/node.h"
#include "data/image_decode.h"
#include "figures/heatmap.h"
#include "figures/raster.h"
#include "figures/selection_map.h"
#include "engine/trainer.h"
#include "analysis/viz_experts.h"
#include "io/config.h"
#include "models/mita.h"
#include "test_util.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

// vit_micro (28x28 gray, patch 7: a 4x4 grid, N = 17) with 2 heads, depth 2, MiTA m = k = 4.
io::Config micro_mita(const std::string& type = "mita") {
  io::Config c = io::load_config(vt::test::fmnist_base_path());
  for (const std::string s : {"model.embed_dim=16", "model.depth=2", "model.num_heads=2", "model.attention.m=4",
                              "model.attention.k=4", "train.threads=1"})
    io::apply_override(c, s);
  io::apply_override(c, "model.attention.type=" + type);
  c.validate();
  return c;
}

Tensor random_image(uint64_t seed) {
  Tensor x = Tensor::empty({1, 1, 28, 28});
  float* p = x.data<float>();
  for (int i = 0; i < 28 * 28; ++i) p[i] = static_cast<float>(std::sin(0.37 * i * static_cast<double>(seed) + i % 11));
  return x;
}

figures::RgbImage gradient_picture(int size) {
  figures::RgbImage p(size, size);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) p.set(x, y, {static_cast<uint8_t>(9 * x), static_cast<uint8_t>(9 * y), 128});
  return p;
}

bool same(figures::Rgb8 a, cv::Vec3b b) { return a.r == b[0] && a.g == b[1] && a.b == b[2]; }

TEST(VizExperts, RoutingAndCountsAreTheTapsAndSumToMTimesKPerLayer) {
  const io::Config cfg = micro_mita();
  models::VisionTransformer model(engine::vit_config(cfg));
  model.eval();
  const Tensor x = random_image(3);
  const analysis::ImageRouting r = analysis::record_image_routing(model, x);
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_EQ(r.tokens, 17);
  EXPECT_EQ(r.grid, 4);
  EXPECT_EQ(r.heads, 2);
  // An independent recording, counted here from the tap's expert_keys [1, H, m, k] and experts [1, H, N].
  models::MitaRoutingTap tap(models::MitaRoutingTap::Mode::record);
  {
    NoGradGuard no_grad;
    (void)model.forward(x);
  }
  ASSERT_EQ(tap.routings.size(), 2u);
  for (int64_t h = 0; h < 2; ++h) {
    const auto counts = analysis::selection_counts(r, h);
    for (size_t l = 0; l < 2; ++l) {
      const Tensor keys = tap.routings[l].expert_keys.contiguous(), ex = tap.routings[l].experts.contiguous();
      std::vector<int64_t> expected(17, 0);
      for (int64_t i = 0; i < 16; ++i) ++expected[static_cast<size_t>(keys.data<int32_t>()[h * 16 + i])];
      EXPECT_EQ(counts[l], expected) << "layer " << l << " head " << h;
      int64_t total = 0;
      for (int64_t c : counts[l]) total += c;
      EXPECT_EQ(total, 4 * 4);  // m·k selections per layer and head
      const auto experts = analysis::routed_experts(r, static_cast<int64_t>(l), h);
      for (int64_t n = 0; n < 17; ++n) EXPECT_EQ(experts[static_cast<size_t>(n)], ex.data<int32_t>()[h * 17 + n]);
    }
  }
  EXPECT_THROW(analysis::selection_counts(r, 2), Error);
}

// Figure 8's mIoU on a routing made by hand: 1 layer, 2 heads, m = 2 experts of k = 2 keys over N = 5 tokens.
TEST(VizExperts, KeyQueryIouIsTheMeanOverExpertsAndHeads) {
  analysis::ImageRouting r;
  r.tokens = 5, r.grid = 2, r.m = 2, r.k = 2, r.heads = 2;
  ops::MitaRouting layer;
  // head 0: expert 0 keys {1, 2}, queries {1, 2, 3} → 2/3; expert 1 keys {0, 4}, queries {0, 4} → 1.
  // head 1: expert 0 keys {3, 4}, queries {} → 0; expert 1 keys {0, 1}, queries all 5 tokens → 2/5.
  layer.expert_keys = Tensor::from_vector({1, 2, 0, 4, 3, 4, 0, 1}, {1, 2, 2, 2}, DType::i32);
  layer.experts = Tensor::from_vector({1, 0, 0, 0, 1, 1, 1, 1, 1, 1}, {1, 2, 5}, DType::i32);
  r.layers.push_back(layer);
  const std::vector<double> iou = analysis::expert_key_query_iou(r);
  ASSERT_EQ(iou.size(), 1u);
  EXPECT_NEAR(iou[0], (2.0 / 3 + 1.0 + 0.0 + 2.0 / 5) / 4, 1e-12);
}

// The same hand-made routing averaged over its two heads (Figure 3 as the paper draws it).
analysis::ImageRouting two_head_routing() {
  analysis::ImageRouting r;
  r.tokens = 5, r.grid = 2, r.m = 2, r.k = 2, r.heads = 2;
  ops::MitaRouting layer;
  layer.expert_keys = Tensor::from_vector({1, 2, 0, 4, 3, 4, 0, 1}, {1, 2, 2, 2}, DType::i32);
  layer.experts = Tensor::from_vector({1, 0, 0, 0, 1, 1, 1, 1, 1, 1}, {1, 2, 5}, DType::i32);
  r.layers.push_back(layer);
  return r;
}

TEST(VizExperts, SharesAndCountsAreAveragedOverTheHeads) {
  const analysis::ImageRouting r = two_head_routing();
  // Expert 0: keys {1, 2} in head 0 and {3, 4} in head 1; queries {1, 2, 3} in head 0, none in head 1.
  analysis::ExpertShares s = analysis::expert_shares(r, 0, std::nullopt, 0);
  EXPECT_EQ(s.key, (std::vector<double>{0, 0.5, 0.5, 0.5, 0.5}));
  EXPECT_EQ(s.query, (std::vector<double>{0, 0.5, 0.5, 0.5, 0}));
  EXPECT_DOUBLE_EQ(s.queries, 1.5);
  // Expert 1: keys {0, 4} and {0, 1}; queries {0, 4} and all five tokens.
  s = analysis::expert_shares(r, 0, std::nullopt, 1);
  EXPECT_EQ(s.key, (std::vector<double>{1, 0.5, 0, 0, 0.5}));
  EXPECT_EQ(s.query, (std::vector<double>{1, 0.5, 0.5, 0.5, 1}));
  EXPECT_DOUBLE_EQ(s.queries, 3.5);
  // One head: 0 or 1.
  s = analysis::expert_shares(r, 0, 0, 0);
  EXPECT_EQ(s.key, (std::vector<double>{0, 1, 1, 0, 0}));
  EXPECT_EQ(s.query, (std::vector<double>{0, 1, 1, 1, 0}));
  EXPECT_DOUBLE_EQ(s.queries, 3);
  // Figure 4 over heads: head 0 selects {1, 2, 0, 4}, head 1 {3, 4, 0, 1}.
  const auto mean = analysis::mean_selection_counts(r);
  ASSERT_EQ(mean.size(), 1u);
  EXPECT_EQ(mean[0], (std::vector<double>{1, 1, 0.5, 0.5, 1}));
  EXPECT_THROW(analysis::expert_shares(r, 0, 2, 0), Error);
  EXPECT_THROW(analysis::expert_shares(r, 0, std::nullopt, 2), Error);
}

TEST(VizExperts, MeanOverHeadsShadesATokenByItsShare) {
  TempDir dir;
  const analysis::ImageRouting r = two_head_routing();
  figures::RgbImage grey(28, 28);
  for (int y = 0; y < 28; ++y)
    for (int x = 0; x < 28; ++x) grey.set(x, y, {128, 128, 128});
  analysis::draw_expert_grid(r, 0, std::nullopt, grey, dir.file("mean.png"));
  analysis::draw_expert_grid(r, 0, 0, grey, dir.file("head0.png"));
  analysis::draw_expert_grid(r, 0, 1, grey, dir.file("head1.png"));
  const cv::Mat mean = data::load_rgb(dir.file("mean.png")), h0 = data::load_rgb(dir.file("head0.png")),
                h1 = data::load_rgb(dir.file("head1.png"));
  // The mean has a second legend line: a 63 px title, one row of 18 + 112 px panels, 10 px padding; and a wider
  // minimum (560 px) for the longer legend.
  EXPECT_EQ(analysis::expert_grid_size(2, 28, true), std::make_pair(560, 63 + 18 + 112 + 10));
  EXPECT_EQ(mean.cols, 560);
  EXPECT_EQ(mean.rows, analysis::expert_grid_size(2, 28, true).second);
  EXPECT_EQ(h0.cols, analysis::expert_grid_size(2, 28).first);
  // Expert 0's panel (10 px padding, under the title and an 18 px strip), token 4 = patch (1, 1), a 56 px cell:
  // not a key in head 0 (dimmed grey), a key in head 1 (orange), a key in half the heads in the mean: orange, but
  // less than head 1's and on a darker base.
  auto centre = [](const cv::Mat& img, int title) { return img.at<cv::Vec3b>(title + 18 + 56 + 28, 10 + 56 + 28); };
  const cv::Vec3b none = centre(h0, 46), full = centre(h1, 46), half = centre(mean, 63);
  auto orange = [](const cv::Vec3b& p) { return static_cast<int>(p[0]) - static_cast<int>(p[2]); };  // r − b
  EXPECT_EQ(orange(none), 0);
  EXPECT_GT(orange(half), 20);
  EXPECT_LT(orange(half), orange(full) - 20);
  EXPECT_GT(half[0], none[0]);
  EXPECT_LT(half[0], full[0]);
}

TEST(VizExperts, HeadOptionIsANumberOrMean) {
  EXPECT_EQ(analysis::parse_head("mean"), std::nullopt);
  EXPECT_EQ(analysis::parse_head("0"), std::optional<int64_t>(0));
  EXPECT_EQ(analysis::parse_head("3"), std::optional<int64_t>(3));
  for (const char* bad : {"", "-1", "two", "1x", "avg"}) expect_error([&] { analysis::parse_head(bad); }, "--head");
}

TEST(VizExperts, NonMitaModelIsRefusedNamingTheAttentionType) {
  models::VisionTransformer dense(engine::vit_config(micro_mita("dense")));
  try {
    analysis::record_image_routing(dense, random_image(1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'dense'"), std::string::npos) << e.what();
  }
}

TEST(VizExperts, PicturesHaveTheDocumentedSizesAndTheMapShowsTheCounts) {
  TempDir dir;
  models::VisionTransformer model(engine::vit_config(micro_mita()));
  model.eval();
  const analysis::ImageRouting r = analysis::record_image_routing(model, random_image(5));
  const figures::RgbImage picture = gradient_picture(28);
  analysis::draw_expert_grid(r, 1, 1, picture, dir.file("grid.png"));
  const cv::Mat grid = data::load_rgb(dir.file("grid.png"));
  // 2x2 panels of 28·4 = 112 px under 18 px label strips, 8 px gaps, a 46 px title, 10 px padding (46 + 2·130 +
  // 8 + 10 = 324); the width is
  // at least 470 px so the title's two lines fit.
  EXPECT_EQ(analysis::expert_grid_size(4, 28), std::make_pair(470, 324));
  EXPECT_EQ(grid.cols, 470);
  EXPECT_EQ(grid.rows, 324);
  EXPECT_TRUE(std::filesystem::exists(dir.file("grid.svg")));

  const auto whole = analysis::selection_counts(r, 1);
  std::vector<std::vector<double>> counts;
  for (const auto& layer : whole) counts.emplace_back(layer.begin(), layer.end());
  figures::draw_selection_map(counts, r.grid, "head 1", r.m, dir.file("map.png"));
  const cv::Mat map = data::load_rgb(dir.file("map.png"));
  const figures::SelectionMapLayout lay = figures::selection_map_layout(2, 4);
  EXPECT_EQ(lay.columns, 2);
  EXPECT_EQ(lay.cell, 44);  // 176 px maps
  ASSERT_EQ(map.cols, lay.width);
  ASSERT_EQ(map.rows, lay.height);
  double hi = 0;
  for (const auto& layer : counts)
    for (size_t t = 1; t < layer.size(); ++t) hi = std::max(hi, layer[t]);
  for (int l = 0; l < 2; ++l)
    for (int t = 1; t <= 16; ++t) {
      const auto [x, y] = lay.cell_origin(l, t, 4);
      const double v = counts[static_cast<size_t>(l)][static_cast<size_t>(t)] / hi;
      EXPECT_TRUE(same(figures::colour_scale(v), map.at<cv::Vec3b>(y + lay.cell / 2, x + lay.cell / 2)))
          << "layer " << l << " token " << t;
    }
  // Twelve layers of 14x14 (the proxy model) fit in four columns at page width.
  const figures::SelectionMapLayout proxy = figures::selection_map_layout(12, 14);
  EXPECT_EQ(proxy.columns, 4);
  EXPECT_LE(proxy.width, 800);
  expect_error(
      [&] {
        figures::draw_selection_map({{1, 2}}, 4, "head 0", 4, dir.file("bad.png"));
      },
      "2 counts for a 4x4");
}

TEST(Heatmap, CellsAreColouredByValueAndTheSizeIsDocumented) {
  TempDir dir;
  figures::HeatmapSpec spec;
  spec.title = "top-1";
  spec.row_axis = "m (experts)";
  spec.col_axis = "k (keys per expert)";
  spec.value_name = "top-1 (%)";
  spec.row_labels = {"16", "25"};
  spec.col_labels = {"16", "25", "36"};
  spec.outlined = {{1, 2}};
  figures::write_heatmap({{70.0, 71.5, 72.0}, {69.0, std::nan(""), 73.0}}, spec, dir.file("h.png"));
  const cv::Mat img = data::load_rgb(dir.file("h.png"));
  const auto [w, h] = figures::heatmap_size(2, 3, spec);
  EXPECT_EQ(img.cols, w);
  EXPECT_EQ(img.rows, h);
  EXPECT_TRUE(std::filesystem::exists(dir.file("h.svg")));
  // The cells start after 14 px padding, a 24 px row title and 48 px row labels (x) and 14 + 34 + 22 + 22 px (y);
  // a cell's corner (away from its text) has the colour of its value on the 69 … 73 scale; NaN is grey.
  auto corner = [&](int i, int j) { return img.at<cv::Vec3b>(92 + i * 64 + 6, 86 + j * 64 + 6); };
  EXPECT_TRUE(same(figures::colour_scale(0.0), corner(1, 0)));
  EXPECT_TRUE(same(figures::colour_scale(0.25), corner(0, 0)));
  EXPECT_TRUE(same(figures::Rgb8{200, 200, 200}, corner(1, 1)));
  const cv::Vec3b frame = img.at<cv::Vec3b>(92 + 64 + 1, 86 + 2 * 64 + 32);  // the outlined cell's red frame
  EXPECT_TRUE(frame[0] > 180 && frame[1] < 80 && frame[2] < 80);
  EXPECT_THROW(figures::write_heatmap({{1.0, 2.0}, {3.0}}, spec, dir.file("bad.png")), Error);
  EXPECT_EQ(figures::colour_scale(0.0).r, 68);
  EXPECT_EQ(figures::colour_scale(1.0).g, 231);
}

}  // namespace
}  // namespace vt::test
