// `vitrain data check DIR` end to end. Skips until src/cli/main.cpp registers the command
// (vt::cli::add_data_command) or when the binary is not built.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/run_vitrain.h"
#include "hostile_images.h"
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

// Every kind of hostile file is listed on its own line with its path and reason; the exit code says so.
TEST(DataCli, CheckNamesEveryHostileFileWithItsReason) {
  if (!std::filesystem::exists(std::string(VT_BINARY_DIR) + "/bin/vitrain")) GTEST_SKIP() << "vitrain not built";
  TempDir dir;
  write_jpeg_rgb(dir.file("ok.JPEG"), pattern_rgb(40, 40));
  const std::vector<HostileFile> hostile = write_hostile_files(dir.path().string());
  const CliRun run = run_vitrain("data check " + dir.path().string() + " -j 2");
  EXPECT_EQ(run.code, 1) << run.output;
  EXPECT_NE(run.output.find("checked 6 images under " + dir.path().string() + ": 5 bad"), std::string::npos)
      << run.output;
  for (const HostileFile& h : hostile) {
    const size_t at = run.output.find("bad: [data] " + h.path + ": ");
    ASSERT_NE(at, std::string::npos) << h.path << "\n" << run.output;
    const std::string line = run.output.substr(at, run.output.find('\n', at) - at);
    EXPECT_NE(line.find(h.reason), std::string::npos) << line;
  }
  // A limit below 40x40 makes the good image bad too.
  const CliRun low = run_vitrain("data check " + dir.path().string() + " --max-image-pixels 1000");
  EXPECT_EQ(low.code, 1) << low.output;
  EXPECT_NE(low.output.find(dir.file("ok.JPEG") + ": 40x40 = 1600 pixels, more than data.max_image_pixels = 1000"),
            std::string::npos)
      << low.output;
  EXPECT_NE(low.output.find(": 6 bad"), std::string::npos) << low.output;
}

}  // namespace
}  // namespace vt::test
