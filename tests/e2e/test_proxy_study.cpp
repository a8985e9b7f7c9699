// scripts/proxy_study.sh in a CI-sized form, end to end with the built vitrain on Debian's Fashion-MNIST: four
// variants x two seeds of a one-block model on 64 training images, one epoch, two runs at a time on the CPU. The
// record, the table (mean ± std over both seeds, Δ vs MiTA beside the paper), the CSV, the chart and the (m, k) grid must appear;
// run again, every recorded run is skipped and the table is the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "io/config.h"
#include "test_util.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

int run_study(const fs::path& dir, const std::string& log) {
  const std::string cmd =
      "cd '" + std::string(VT_SOURCE_DIR) + "' && VITRAIN='" + std::string(VT_BINARY_DIR) +
      "/bin/vitrain' VARIANTS='dense mita mita_dwc mk_16_16' SEEDS='0 1' EPOCHS=1 DEVICES=cpu JOBS=2 RECORD='" +
      (dir / "record").string() +
      "' EXTRA_SET='data.train_limit=64 data.test_limit=32 model.depth=1 model.embed_dim=48 model.num_heads=3 "
      "train.batch_size=16 eval.batch_size=32 schedule.warmup_epochs=0 train.threads=1 data.workers=1' "
      "bash scripts/proxy_study.sh '" +
      vt::test::fmnist_dir() + "' '" + (dir / "out").string() + "' > '" + (dir / log).string() + "' 2>&1";
  return std::system(cmd.c_str());
}

TEST(ProxyStudy, CiSizedRunRecordsTablesAndChart) {
  if (!fs::exists(vt::test::fmnist_dir())) GTEST_SKIP() << "Fashion-MNIST not installed";
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_proxy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_EQ(run_study(dir, "first.log"), 0) << read_file(dir / "first.log");
  for (const char* v : {"dense", "mita", "mita_dwc", "mk_16_16"})
    for (int s : {0, 1})
      EXPECT_TRUE(fs::exists(dir / "record" / v / ("seed" + std::to_string(s)) / "metrics.jsonl")) << v << " " << s;
  const std::string table = read_file(dir / "out" / "proxy_study.md");
  // | variant | seeds | mean ± std | Δ vs mita | paper |
  const std::regex row(
      R"(\| (dense|mita|mita_dwc) \| 2 \| [0-9]+\.[0-9]{2} ± [0-9]+\.[0-9]{2} \| [-+][0-9]+\.[0-9]{2} \| )");
  int rows = 0;
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it) ++rows;
  EXPECT_EQ(rows, 3) << table;
  EXPECT_NE(table.find("| mita | 2 |"), std::string::npos) << table;
  EXPECT_NE(table.find("+0.00 | 0 (71.1)"), std::string::npos) << table;  // MiTA against itself, the paper's 0
  const std::string csv = read_file(dir / "out" / "proxy_study.csv");
  EXPECT_EQ(csv.rfind("label,mean,std,seeds\n", 0), 0u) << csv;
  EXPECT_NE(csv.find("\"MiTA + DWC\","), std::string::npos) << csv;
  EXPECT_GT(fs::file_size(dir / "out" / "proxy_study.png"), 1000u);
  EXPECT_GT(fs::file_size(dir / "out" / "proxy_study.svg"), 1000u);
  // The (m, k) grid: MiTA's (25, 25) and the mk_16_16 cell, sorted by m then k, each with its 2 seeds.
  const std::string grid = read_file(dir / "out" / "mk_grid.csv");
  EXPECT_TRUE(std::regex_match(grid, std::regex("m,k,top1,seeds\n16,16,[0-9.]+,2\n25,25,[0-9.]+,2\n"))) << grid;
  EXPECT_GT(fs::file_size(dir / "out" / "mk_grid.png"), 1000u);

  // Again: nothing left to run, the same table.
  ASSERT_EQ(run_study(dir, "second.log"), 0) << read_file(dir / "second.log");
  const std::string second = read_file(dir / "second.log");
  EXPECT_NE(second.find("== mita_dwc seed 1: done"), std::string::npos) << second;
  EXPECT_EQ(second.find(" on cpu:"), std::string::npos) << "a recorded run ran again:\n" << second;
  EXPECT_EQ(read_file(dir / "out" / "proxy_study.md"), table);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
