// `vitrain viz experts`, `eval-sweep`, `eval-swap` and the attention swap of `vitrain eval --set
// model.attention.type=...` (the paper's Appendix C) through the binary, on a tiny MiTA model.
#include <gtest/gtest.h>

#include "test_util.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "figures/raster.h"
#include "figures/selection_map.h"
#include "engine/trainer.h"
#include "analysis/viz_experts.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "cli/run_vitrain.h"

namespace {

namespace fs = std::filesystem;
using namespace vt;

using vt::test::CliRun;
using vt::test::fmnist_dir;
using vt::test::run_vitrain;

class VizCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vt_viz_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // vit_micro at 28x28 with `chans` channels (3: the timm eval transform; 1: gray), depth 2, 2 heads, MiTA
  // m = k = 4 on a 4x4 patch grid; its config file and untrained weights.
  io::Config write_model(const std::string& name, const std::string& type, int chans) {
    std::ofstream(path(name + ".yaml")) << "model:\n  name: vit_micro\n  in_chans: " << chans
                                        << "\n  embed_dim: 16\n  depth: 2\n  num_heads: 2\n  attention:\n    type: "
                                        << type << "\n    m: 4\n    k: 4\ndata:\n  dataset: fashion_mnist\n  data_dir: "
                                        << fmnist_dir() << "\n  test_limit: 20\n"
                                        << "train:\n  device: cpu\n  threads: 1\neval:\n  batch_size: 20\n";
    io::Config cfg = io::load_config(path(name + ".yaml"));
    io::save_safetensors(path(name + ".safetensors"), models::VisionTransformer(engine::vit_config(cfg)).state_dict());
    return cfg;
  }

  std::string write_image() {
    figures::RgbImage img(40, 30);
    for (int y = 0; y < 30; ++y)
      for (int x = 0; x < 40; ++x)
        img.set(x, y, {static_cast<uint8_t>(6 * x), static_cast<uint8_t>(8 * y), static_cast<uint8_t>((x * y) % 256)});
    img.save(path("image.png"));
    return path("image.png");
  }

  fs::path dir_;
};

std::pair<int, int> png_size(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::array<unsigned char, 24> h{};
  in.read(reinterpret_cast<char*>(h.data()), h.size());
  EXPECT_TRUE(in && h[1] == 'P' && h[2] == 'N' && h[3] == 'G') << file << " is not a PNG";
  auto be32 = [&](int o) { return (h[o] << 24) | (h[o + 1] << 16) | (h[o + 2] << 8) | h[o + 3]; };
  return {be32(16), be32(20)};  // IHDR width, height
}

std::vector<std::string> lines(const std::string& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool fashion_mnist_installed() { return fs::exists(vt::test::fmnist_dir()); }

TEST_F(VizCli, ExpertsWritesPicturesOfTheDocumentedSizeAndTheTapsCounts) {
  for (int chans : {3, 1}) {
    const std::string name = "mita" + std::to_string(chans);
    const io::Config cfg = write_model(name, "mita", chans);
    const std::string image = write_image(), out = path("viz" + std::to_string(chans));
    CliRun r = run_vitrain("viz experts --config " + path(name + ".yaml") + " --weights " +
                           path(name + ".safetensors") + " --image " + image + " --out " + out + " --head 1");
    ASSERT_EQ(r.code, 0) << r.output;
    for (const char* f : {"layer1_experts.png", "layer2_experts.png"})
      EXPECT_EQ(png_size(out + "/" + f), analysis::expert_grid_size(4, 28)) << f;
    const figures::SelectionMapLayout lay = figures::selection_map_layout(2, 4);
    EXPECT_EQ(png_size(out + "/selection_map.png"), std::make_pair(lay.width, lay.height));

    // The counts drawn: one row per (layer, token), m·k = 16 per layer, equal to the tap's on the same input.
    models::VisionTransformer model(engine::vit_config(cfg));
    io::NamedTensors w = io::load_safetensors(path(name + ".safetensors"));
    model.load_state_dict(w, true);
    model.eval();
    const auto expected = analysis::selection_counts(
        analysis::record_image_routing(model, analysis::load_viz_input(cfg, image).image), 1);
    const auto rows = lines(out + "/selection_counts.csv");
    ASSERT_EQ(rows.size(), 1u + 2 * 17);
    EXPECT_EQ(rows[0], "layer,head,token,row,col,count");
    std::map<int, int64_t> per_layer;
    for (size_t i = 1; i < rows.size(); ++i) {
      int layer = 0, head = 0, token = 0, row = 0, col = 0;
      long long count = 0;
      ASSERT_EQ(std::sscanf(rows[i].c_str(), "%d,%d,%d,%d,%d,%lld", &layer, &head, &token, &row, &col, &count), 6);
      EXPECT_EQ(head, 1);
      EXPECT_EQ(count, expected[static_cast<size_t>(layer - 1)][static_cast<size_t>(token)]) << rows[i];
      per_layer[layer] += count;
    }
    EXPECT_EQ(per_layer, (std::map<int, int64_t>{{1, 16}, {2, 16}}));
  }
}

// Without --head the panels average over the heads (the paper's Figure 3): the taller mean-over-heads grids, and
// selection_counts.csv holds every head's counts (m·k = 16 per layer and head).
TEST_F(VizCli, ExpertsDefaultsToTheMeanOverHeads) {
  write_model("mita", "mita", 1);
  const std::string out = path("viz");
  CliRun r = run_vitrain("viz experts --config " + path("mita.yaml") + " --weights " + path("mita.safetensors") +
                         " --image " + write_image() + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* f : {"layer1_experts.png", "layer2_experts.png"})
    EXPECT_EQ(png_size(out + "/" + f), analysis::expert_grid_size(4, 28, true)) << f;
  const auto rows = lines(out + "/selection_counts.csv");
  ASSERT_EQ(rows.size(), 1u + 2 * 2 * 17);  // 2 heads × 2 layers × 17 tokens
  std::map<std::pair<int, int>, int64_t> per_head_layer;
  for (size_t i = 1; i < rows.size(); ++i) {
    int layer = 0, head = 0, token = 0, row = 0, col = 0;
    long long count = 0;
    ASSERT_EQ(std::sscanf(rows[i].c_str(), "%d,%d,%d,%d,%d,%lld", &layer, &head, &token, &row, &col, &count), 6);
    per_head_layer[{head, layer}] += count;
  }
  EXPECT_EQ(per_head_layer,
            (std::map<std::pair<int, int>, int64_t>{{{0, 1}, 16}, {{0, 2}, 16}, {{1, 1}, 16}, {{1, 2}, 16}}));
  r = run_vitrain("viz experts --config " + path("mita.yaml") + " --weights " + path("mita.safetensors") + " --image " +
                  path("image.png") + " --out " + out + " --head avg");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--head 'avg'"), std::string::npos) << r.output;
}

TEST_F(VizCli, ExpertsRefusesAModelWithoutMitaNamingItsAttention) {
  write_model("dense", "dense", 1);
  CliRun r = run_vitrain("viz experts --config " + path("dense.yaml") + " --weights " + path("dense.safetensors") +
                         " --image " + write_image() + " --out " + path("viz"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'dense'"), std::string::npos) << r.output;
  r = run_vitrain("viz experts --config " + path("dense.yaml") + " --weights " + path("dense.safetensors") +
                  " --image " + path("image.png") + " --out " + path("viz") +
                  " --set model.attention.type=mita --head 2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--head 2"), std::string::npos) << r.output;
}

TEST_F(VizCli, EvalSwapsTheAttentionOfFrozenWeightsBothWays) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "Fashion-MNIST not installed";
  write_model("mita", "mita", 1);
  write_model("dense", "dense", 1);
  CliRun r = run_vitrain("eval --config " + path("mita.yaml") + " --weights " + path("mita.safetensors") +
                         " --set model.attention.type=dense");
  EXPECT_EQ(r.code, 0) << r.output;
  r = run_vitrain("eval --config " + path("dense.yaml") + " --weights " + path("dense.safetensors") +
                  " --set model.attention.type=mita");
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(VizCli, EvalSweepWritesOneCsvRowPerMkAndAHeatMap) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "Fashion-MNIST not installed";
  write_model("mita", "mita", 1);
  CliRun r = run_vitrain("eval-sweep --config " + path("mita.yaml") + " --weights " + path("mita.safetensors") +
                         " --m 1,4 --k 2,4,8 --out " + path("sweep"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto rows = lines(path("sweep/mk_sweep.csv"));
  ASSERT_EQ(rows.size(), 1u + 6);
  EXPECT_EQ(rows[0], "m,k,top1,top5,loss,images");
  EXPECT_EQ(rows[1].rfind("1,2,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[6].rfind("4,8,", 0), 0u) << rows[6];
  EXPECT_EQ(rows[6].substr(rows[6].rfind(',') + 1), "20");
  EXPECT_GT(png_size(path("sweep/mk_sweep.png")).first, 0);

  // A budget the 4x4 grid cannot pool to is refused before any evaluation, naming the key.
  r = run_vitrain("eval-sweep --config " + path("mita.yaml") + " --weights " + path("mita.safetensors") +
                  " --m 4,3 --k 4 --out " + path("sweep_bad"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("model.attention.m"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("evaluating"), std::string::npos) << r.output;
  // A dense model has no (m, k) to sweep.
  write_model("dense", "dense", 1);
  r = run_vitrain("eval-sweep --config " + path("dense.yaml") + " --weights " + path("dense.safetensors") +
                  " --m 4 --k 4 --out " + path("sweep_dense"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("'dense'"), std::string::npos) << r.output;
}

TEST_F(VizCli, EvalSwapWritesTheTwoByTwoMatrix) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "Fashion-MNIST not installed";
  write_model("mita", "mita", 1);
  write_model("dense", "dense", 1);
  CliRun r = run_vitrain("eval-swap --config " + path("mita.yaml") + " --weights-dense " + path("dense.safetensors") +
                         " --weights-mita " + path("mita.safetensors") + " --out " + path("swap"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto rows = lines(path("swap/swap.csv"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0], "trained,evaluated,top1");
  EXPECT_EQ(rows[1].rfind("dense,dense,", 0), 0u);
  EXPECT_EQ(rows[4].rfind("mita,mita,", 0), 0u);
  EXPECT_GT(png_size(path("swap/swap.png")).first, 0);
}

TEST_F(VizCli, EvalSwapWithAgentWeightsWritesTheThreeByThreeMatrix) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "Fashion-MNIST not installed";
  write_model("mita", "mita", 1);
  write_model("dense", "dense", 1);
  write_model("agent", "agent", 1);
  CliRun r = run_vitrain("eval-swap --config " + path("mita.yaml") +
                         " --set model.attention.agent_num=4 "
                         "--weights-dense " +
                         path("dense.safetensors") + " --weights-mita " + path("mita.safetensors") +
                         " --weights-agent " + path("agent.safetensors") + " --out " + path("swap"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto rows = lines(path("swap/swap.csv"));
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_EQ(rows[3].rfind("dense,agent,", 0), 0u);
  EXPECT_EQ(rows[7].rfind("agent,dense,", 0), 0u);
  EXPECT_EQ(rows[9].rfind("agent,agent,", 0), 0u);
  EXPECT_GT(png_size(path("swap/swap.png")).first, 0);
}

TEST_F(VizCli, EvalSwapDrawsAGivenCsvAndNamesItsProblems) {
  std::ofstream(path("paper.csv")) << "trained,evaluated,top1\ndense,dense,72.1\ndense,mita,58.7\nmita,dense,66.6\n"
                                      "mita,mita,71.1\n";
  CliRun r = run_vitrain("eval-swap --csv " + path("paper.csv") + " --out " + path("fig9"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(lines(path("fig9/swap.csv"))[2], "dense,mita,58.7");
  EXPECT_GT(png_size(path("fig9/swap.png")).first, 0);
  std::ofstream(path("bad.csv")) << "trained,evaluated,top1\ndense,linear,70\n";
  r = run_vitrain("eval-swap --csv " + path("bad.csv") + " --out " + path("fig9b"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("'linear'"), std::string::npos) << r.output;
  // A CSV naming Agent attention makes the 3x3 matrix.
  std::ofstream(path("three.csv")) << "trained,evaluated,top1\ndense,agent,70\nagent,agent,71\n";
  r = run_vitrain("eval-swap --csv " + path("three.csv") + " --out " + path("fig9c"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto rows = lines(path("fig9c/swap.csv"));
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_EQ(rows[3], "dense,agent,70");
  EXPECT_EQ(rows[9], "agent,agent,71");
}

}  // namespace
