// The pictures of `vitrain viz experts` and of the Appendix C heat maps: the routing they draw is the routing
// tap's, the selection map's cells carry the counts, and the PNGs have the documented sizes.
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <string>

#include "autograd/node.h"
#include "data/image_decode.h"
#include "engine/heatmap.h"
#include "engine/trainer.h"
#include "engine/viz_experts.h"
#include "io/config.h"
#include "models/mita.h"
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

engine::RgbImage gradient_picture(int size) {
  engine::RgbImage p(size, size);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) p.set(x, y, {static_cast<uint8_t>(9 * x), static_cast<uint8_t>(9 * y), 128});
  return p;
}

bool same(engine::Rgb8 a, cv::Vec3b b) { return a.r == b[0] && a.g == b[1] && a.b == b[2]; }

TEST(VizExperts, RoutingAndCountsAreTheTapsAndSumToMTimesKPerLayer) {
  const io::Config cfg = micro_mita();
  models::VisionTransformer model(engine::vit_config(cfg));
  model.eval();
  const Tensor x = random_image(3);
  const engine::ImageRouting r = engine::record_image_routing(model, x);
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
    const auto counts = engine::selection_counts(r, h);
    for (size_t l = 0; l < 2; ++l) {
      const Tensor keys = tap.routings[l].expert_keys.contiguous(), ex = tap.routings[l].experts.contiguous();
      std::vector<int64_t> expected(17, 0);
      for (int64_t i = 0; i < 16; ++i) ++expected[static_cast<size_t>(keys.data<int32_t>()[h * 16 + i])];
      EXPECT_EQ(counts[l], expected) << "layer " << l << " head " << h;
      int64_t total = 0;
      for (int64_t c : counts[l]) total += c;
      EXPECT_EQ(total, 4 * 4);  // m·k selections per layer and head
      const auto experts = engine::routed_experts(r, static_cast<int64_t>(l), h);
      for (int64_t n = 0; n < 17; ++n) EXPECT_EQ(experts[static_cast<size_t>(n)], ex.data<int32_t>()[h * 17 + n]);
    }
  }
  EXPECT_THROW(engine::selection_counts(r, 2), Error);
}

TEST(VizExperts, NonMitaModelIsRefusedNamingTheAttentionType) {
  models::VisionTransformer dense(engine::vit_config(micro_mita("dense")));
  try {
    engine::record_image_routing(dense, random_image(1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'dense'"), std::string::npos) << e.what();
  }
}

TEST(VizExperts, PicturesHaveTheDocumentedSizesAndTheMapShowsTheCounts) {
  TempDir dir;
  models::VisionTransformer model(engine::vit_config(micro_mita()));
  model.eval();
  const engine::ImageRouting r = engine::record_image_routing(model, random_image(5));
  const engine::RgbImage picture = gradient_picture(28);
  engine::draw_expert_grid(r, 1, 1, picture, dir.file("grid.png"));
  const cv::Mat grid = data::load_rgb(dir.file("grid.png"));
  // 2x2 panels of 28·4 = 112 px under 16 px label strips, 6 px gaps, a 30 px title, 10 px padding; the title
  // (43 characters of 8 px, less the last gap) sets the width.
  EXPECT_EQ(engine::expert_grid_size(4, 28), std::make_pair(362, 302));
  EXPECT_EQ(grid.cols, 362);
  EXPECT_EQ(grid.rows, 302);

  const auto counts = engine::selection_counts(r, 1);
  engine::draw_selection_map(counts, r.grid, 1, dir.file("map.png"));
  const cv::Mat map = data::load_rgb(dir.file("map.png"));
  EXPECT_EQ(engine::selection_map_size(2, 4), std::make_pair(474, 336));  // two 224 px maps of 56 px cells
  ASSERT_EQ(map.cols, 474);
  ASSERT_EQ(map.rows, 336);
  int64_t hi = 0;
  for (const auto& layer : counts)
    for (size_t t = 1; t < layer.size(); ++t) hi = std::max(hi, layer[t]);
  for (int l = 0; l < 2; ++l)
    for (int t = 1; t <= 16; ++t) {
      const int x = 10 + l * (224 + 6) + ((t - 1) % 4) * 56 + 28, y = 46 + ((t - 1) / 4) * 56 + 28;
      const double v = static_cast<double>(counts[static_cast<size_t>(l)][static_cast<size_t>(t)]) /
                       static_cast<double>(hi);
      EXPECT_TRUE(same(engine::colour_scale(v), map.at<cv::Vec3b>(y, x))) << "layer " << l << " token " << t;
    }
}

TEST(Heatmap, CellsAreColouredByValueAndTheSizeIsDocumented) {
  TempDir dir;
  engine::HeatmapSpec spec;
  spec.title = "top-1";
  spec.row_axis = "m";
  spec.col_axis = "k";
  spec.row_labels = {"16", "25"};
  spec.col_labels = {"16", "25", "36"};
  engine::write_heatmap({{70.0, 71.5, 72.0}, {69.0, std::nan(""), 73.0}}, spec, dir.file("h.png"));
  const cv::Mat img = data::load_rgb(dir.file("h.png"));
  const auto [w, h] = engine::heatmap_size(2, 3, spec);
  EXPECT_EQ(img.cols, w);
  EXPECT_EQ(img.rows, h);
  EXPECT_THROW(engine::write_heatmap({{1.0, 2.0}, {3.0}}, spec, dir.file("bad.png")), Error);
  EXPECT_EQ(engine::colour_scale(0.0).r, 68);
  EXPECT_EQ(engine::colour_scale(1.0).g, 231);
}

}  // namespace
}  // namespace vt::test
