// `vitrain` with the Long Range Arena configs on bad input: one clear error naming the key or folder and a
// non-zero exit, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "run_vitrain.h"

namespace vt::test {
namespace {

const std::string kConfig = std::string(VT_SOURCE_DIR) + "/configs/lra/listops_mita.yaml";

void expect_error_line(const CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
}

TEST(LraCli, TrainWithoutDataDirSaysHowToGiveIt) {
  expect_error_line(run_vitrain("train -c " + kConfig + " --device cpu --set train.output=/tmp/vt_lra_cli_unused"),
                    "data.data_dir is not set");
}

TEST(LraCli, AMissingDataFolderIsNamed) {
  expect_error_line(run_vitrain("train -c " + kConfig +
                                " --device cpu --set data.data_dir=/nonexistent/lra "
                                "--set train.output=/tmp/vt_lra_cli_unused"),
                    "/nonexistent/lra");
}

TEST(LraCli, BadLraKeysAreNamed) {
  expect_error_line(run_vitrain("train -c " + kConfig + " --set data.lra_task=cifar"), "data.lra_task");
  expect_error_line(run_vitrain("train -c " + kConfig + " --set model.pooling=max"), "model.pooling");
  expect_error_line(run_vitrain("train -c " + kConfig + " --set data.max_length=-3"), "data.max_length");
}

TEST(LraCli, FlopsSaysLraClassifiersAreNotCounted) {
  expect_error_line(run_vitrain("flops -c " + kConfig), "data.dataset: lra");
}

}  // namespace
}  // namespace vt::test
