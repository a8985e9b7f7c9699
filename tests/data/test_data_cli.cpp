// `vitrain data check DIR` end to end. Skips until src/cli/main.cpp registers the command
// (vt::cli::add_data_command) or when the binary is not built.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/run_vitrain.h"
#include "image_writers.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

TEST(DataCli, CheckListsBadFilesAndFailsOnlyThen) {
  if (!std::filesystem::exists(std::string(VT_BINARY_DIR) + "/bin/vitrain")) GTEST_SKIP() << "vitrain not built";
  if (run_vitrain("data --help").output.find("check") == std::string::npos)
    GTEST_SKIP() << "main.cpp does not register `data` yet";
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "train" / "a");
  write_jpeg_rgb(dir.file("train/a/ok.JPEG"), pattern_rgb(20, 20));
  const CliRun good = run_vitrain("data check " + dir.path().string() + " -j 2");
  EXPECT_EQ(good.code, 0) << good.output;
  EXPECT_NE(good.output.find("checked 1 images"), std::string::npos) << good.output;
  truncate_copy(dir.file("train/a/ok.JPEG"), dir.file("train/a/cut.JPEG"), 150);
  const CliRun bad = run_vitrain("data check " + dir.path().string());
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("cut.JPEG"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("1 bad"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace vt::test
