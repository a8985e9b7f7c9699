// Evaluation on an ImageFolder val/ with unreadable images: they are left out of the count and the metrics
// (not replaced by a neighbour, which would count it twice) and reported as bad_files, through the engine and
// through `vitrain eval`'s printed summary and JSON row.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/run_vitrain.h"
#include "engine/trainer.h"
#include "hostile_images.h"
#include "image_writers.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "models/vit.h"
#include "unit/io_temp_dir.h"

namespace fs = std::filesystem;

namespace vt::test {
namespace {

const std::vector<std::string> kOverrides = {"data.dataset=imagefolder", "data.workers=2",      "model.img_size=32",
                                             "model.patch_size=8",       "model.num_classes=2", "model.embed_dim=24",
                                             "model.num_heads=2",        "model.depth=1",       "train.device=cpu",
                                             "train.threads=2",          "eval.batch_size=2"};
const std::string kYaml = std::string(VT_SOURCE_DIR) + "/configs/imagenet/deit_tiny_dense.yaml";

// val/ of 2 classes x 3 good 40x40 JPEGs, plus a truncated JPEG in class0 and random bytes in class1; and random
// weights for the configured model.
struct EvalSetup {
  TempDir dir;
  io::Config cfg;
  std::string weights, bad1, bad2;
  EvalSetup() {
    for (int c = 0; c < 2; ++c) {
      const fs::path cls = dir.path() / "val" / ("class" + std::to_string(c));
      fs::create_directories(cls);
      for (int i = 0; i < 3; ++i)
        write_jpeg_rgb((cls / (std::to_string(i) + ".jpg")).string(), pattern_rgb(40, 40, c * 3 + i));
    }
    bad1 = dir.file("val/class0/1b_truncated.jpg");
    write_truncated_jpeg(bad1, 9);
    bad2 = dir.file("val/class1/0b_noise.JPEG");
    write_random_bytes(bad2, 2000, 3);
    std::vector<std::string> o = kOverrides;
    o.push_back("data.data_dir=" + dir.path().string());
    cfg = io::load_config(kYaml, o);
    weights = dir.file("w.safetensors");
    models::VisionTransformer model(engine::vit_config(cfg));
    io::save_safetensors(weights, model.state_dict());
  }
};

TEST(EvalBadFiles, BadValImagesAreLeftOutAndCounted) {
  EvalSetup s;
  const engine::EvalResult with_bad = engine::evaluate_weights(s.cfg, s.weights);
  EXPECT_EQ(with_bad.count, 6);  // 8 files, 2 bad
  EXPECT_EQ(with_bad.bad_files, 2);
  // The same metrics as on val/ without the two files: nothing was replaced or duplicated.
  fs::remove(s.bad1);
  fs::remove(s.bad2);
  const engine::EvalResult clean = engine::evaluate_weights(s.cfg, s.weights);
  EXPECT_EQ(clean.count, 6);
  EXPECT_EQ(clean.bad_files, 0);
  EXPECT_DOUBLE_EQ(with_bad.top1, clean.top1);
  EXPECT_DOUBLE_EQ(with_bad.top5, clean.top5);
  EXPECT_DOUBLE_EQ(with_bad.loss, clean.loss);
}

// A val/ of bad files only is an error, not NaN metrics over zero images.
TEST(EvalBadFiles, AValSplitOfBadFilesOnlyIsAnError) {
  EvalSetup s;
  std::vector<fs::path> good;
  for (const auto& e : fs::recursive_directory_iterator(s.dir.path() / "val"))
    if (e.path().extension() == ".jpg" && e.path() != s.bad1) good.push_back(e.path());
  ASSERT_EQ(good.size(), 6u);
  for (const fs::path& p : good) fs::remove(p);
  try {
    engine::evaluate_weights(s.cfg, s.weights);
    ADD_FAILURE() << "an evaluation over zero readable images succeeded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(": every image is unreadable (2 bad files)"), std::string::npos) << e.what();
  }
}

TEST(EvalBadFiles, VitrainEvalReportsThemInTheSummaryAndTheRow) {
  if (!fs::exists(std::string(VT_BINARY_DIR) + "/bin/vitrain")) GTEST_SKIP() << "vitrain not built";
  EvalSetup s;
  std::string args = "eval -c " + kYaml + " -w " + s.weights + " --json --set data.data_dir=" + s.dir.path().string();
  for (const std::string& o : kOverrides) args += " --set " + o;
  const CliRun run = run_vitrain(args);
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("(6 images,"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("2 unreadable images left out of the metrics"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\"images\":6,\"bad_files\":2"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(s.bad1), std::string::npos) << run.output;  // each is named where it is met
  EXPECT_NE(run.output.find(s.bad2), std::string::npos) << run.output;
}

}  // namespace
}  // namespace vt::test
