// End to end on real Fashion-MNIST (Debian's dataset-fashion-mnist): a short run must learn, write its
// artefacts, and the saved weights must evaluate to the same accuracy.
#include <gtest/gtest.h>
#include <unistd.h>

#include "test_util.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/trainer.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

TEST(FashionMnist, ShortRunLearnsAndSavedWeightsReproduceTheAccuracy) {
  io::Config cfg = io::load_config(vt::test::fmnist_base_path());
  if (!fs::exists(cfg.data.data_dir)) GTEST_SKIP() << "Fashion-MNIST not installed at " << cfg.data.data_dir;
  cfg.data.train_limit = 10000;
  cfg.data.test_limit = 1000;
  cfg.train.epochs = 2;
  // A folder of this process's own: two test runs at once (two checkouts, two engineers) must not share metrics.
  const fs::path out = fs::temp_directory_path() / ("vt_e2e_fmnist_" + std::to_string(::getpid()));
  fs::remove_all(out);
  cfg.train.output = out.string();
  cfg.schedule.warmup_epochs = 0.2;
  engine::TrainSummary s = engine::train(cfg);
  EXPECT_GT(s.test.top1, 65.0) << "a ViT should pass 65% after 2 short epochs on 10k images (chance is 10%)";
  EXPECT_EQ(s.test.count, 1000);
  std::ifstream metrics(s.metrics_path);
  int lines = 0;
  for (std::string l; std::getline(metrics, l);) lines += !l.empty();
  EXPECT_GE(lines, 4);
  engine::EvalResult again = engine::evaluate_weights(cfg, s.weights_path);
  EXPECT_DOUBLE_EQ(again.top1, s.test.top1);
  fs::remove_all(out);
}

}  // namespace
}  // namespace vt::test
