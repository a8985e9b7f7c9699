// `vitrain seg-eval`, `vitrain eval` with a segmentation config, and `vitrain viz seg` through the binary: bad
// input (missing weights, missing data folder, weights of another model) ends with a clear error and a non-zero
// exit; viz seg writes image | prediction side by side. (Full evaluation runs: tests/data/test_seg_evaluate.cpp
// and the e2e segmentation test.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/run_vitrain.h"
#include "figures/raster.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "models/segmenter.h"

namespace {

namespace fs = std::filesystem;
using namespace vt;
using vt::test::CliRun;
using vt::test::run_vitrain;

class SegCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vt_seg_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // A tiny Segmenter (vit_micro, crop 28, patch 7, one block, 150 classes, linear decoder) and its weights.
    std::ofstream(path("seg.yaml")) << "model:\n  name: vit_micro\n  img_size: 28\n  patch_size: 7\n  in_chans: 3\n"
                                    << "  embed_dim: 16\n  depth: 1\n  num_heads: 2\n  decoder:\n    type: linear\n"
                                    << "data:\n  dataset: ade20k\n  data_dir: " << path("no_such_dir") << "\n"
                                    << "train:\n  device: cpu\n  threads: 1\neval:\n  best_metric: miou\n";
    const io::Config cfg = io::load_config(path("seg.yaml"));
    io::save_safetensors(path("seg.safetensors"),
                         models::Segmenter(models::segmenter_config(cfg.model, 0)).state_dict());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(SegCli, MissingWeightsIsAnError) {
  const CliRun r = run_vitrain("seg-eval -c " + path("seg.yaml") + " -w " + path("missing.safetensors"));
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("missing.safetensors"), std::string::npos) << r.output;
}

TEST_F(SegCli, MissingDataFolderIsAClearError) {
  for (const std::string cmd : {"seg-eval", "eval"}) {
    const CliRun r = run_vitrain(cmd + " -c " + path("seg.yaml") + " -w " + path("seg.safetensors"));
    EXPECT_EQ(r.code, 1) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("error:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("no_such_dir"), std::string::npos) << r.output;
  }
}

TEST_F(SegCli, WeightsOfAnotherModelAreAnErrorNamingTheFile) {
  io::save_safetensors(path("other.safetensors"), {{"foo", Tensor::zeros({2})}});
  fs::create_directories(path("image_dir"));
  figures::RgbImage img(40, 30);
  img.save(path("image.png"));
  const CliRun r = run_vitrain("viz seg -c " + path("seg.yaml") + " -w " + path("other.safetensors") + " --image " +
                               path("image.png") + " -o " + path("out.png"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("other.safetensors"), std::string::npos) << r.output;
}

TEST_F(SegCli, VizSegWritesImageAndPredictionSideBySide) {
  figures::RgbImage img(40, 30);
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 40; ++x) img.set(x, y, {static_cast<uint8_t>(6 * x), static_cast<uint8_t>(8 * y), 90});
  img.save(path("image.png"));
  const CliRun r = run_vitrain("viz seg -c " + path("seg.yaml") + " -w " + path("seg.safetensors") + " --image " +
                               path("image.png") + " -o " + path("out.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  ASSERT_TRUE(fs::exists(path("out.png")));
  // PNG header: width and height are big-endian at bytes 16..23; two 40-wide panels with an 8-pixel gap.
  std::ifstream f(path("out.png"), std::ios::binary);
  unsigned char h[24];
  f.read(reinterpret_cast<char*>(h), 24);
  EXPECT_EQ((h[16] << 24) | (h[17] << 16) | (h[18] << 8) | h[19], 2 * 40 + 8);
  EXPECT_EQ((h[20] << 24) | (h[21] << 16) | (h[22] << 8) | h[23], 30);
}

}  // namespace
