// scripts/reproduce_table4.sh in its CI-sized form, end to end with the built vitrain: on a generated mini-ADE20K,
// every Table 4 config shrunk (32² crops, patch 8, one block of width 48, a small CBT) benches, prints the
// estimate, trains one epoch on the CPU from random weights (PRETRAINED=none), evaluates and lands in table4.md
// beside the paper's numbers; run again, every finished run is skipped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "data/mini_ade20k.h"
#include "test_util.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

// Runs the script with the CI-sized knobs; its console output goes to `log`. Returns the exit status.
int run_script(const fs::path& data, const fs::path& out, const fs::path& log) {
  const std::string cmd =
      "VITRAIN='" + std::string(VT_BINARY_DIR) +
      "/bin/vitrain' EPOCHS=1 BATCH=4 DEVICE=cpu PRETRAINED=none "
      "BENCH_STEPS=1 BENCH_WARMUP=0 BENCH_EXTRA='--threads 1' "
      "EXTRA_SET='data.workers=2 model.img_size=32 model.patch_size=8 model.embed_dim=48 model.num_heads=3 "
      "model.depth=1 model.attention.m=4 model.attention.k=4 model.decoder.heads=2 model.decoder.head_dim=8 "
      "model.decoder.reps_grid=2 train.threads=2 eval.batch_size=4 eval.seg_short_side=32 eval.seg_long_side=128 "
      "eval.seg_stride=16' bash '" +
      std::string(VT_SOURCE_DIR) + "/scripts/reproduce_table4.sh' '" + data.string() + "' 1 '" + out.string() +
      "' > '" + log.string() + "' 2>&1";
  return std::system(cmd.c_str());
}

TEST(ReproduceTable4, CiSizedRunFillsTheTableBesideThePaper) {
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_table4_" + std::to_string(::getpid()));
  write_mini_ade20k((dir / "data").string());
  const fs::path out = dir / "out";
  ASSERT_EQ(run_script(dir / "data", out, dir / "first.log"), 0) << read_file(dir / "first.log");

  const std::string console = read_file(dir / "first.log");
  EXPECT_NE(console.find("Estimated cost on this hardware (8 training and 3 validation images"), std::string::npos)
      << console;
  EXPECT_TRUE(std::regex_search(console, std::regex(R"(\ntotal +[0-9.]+\n)"))) << console;

  const std::string table = read_file(out / "table4.md");
  // A row: config | row | epochs | mIoU (final) | best | paper mIoU | Δ | params | MACs | paper FLOPs | train | eval |
  const std::regex row(
      R"(\| (vit_(tiny|small|base|large)_[a-z]+) \| [^|]+ \| 1 \| ([0-9]+\.[0-9]{2}) \| )"
      R"(([0-9]+\.[0-9]{2}) \| ([0-9]+\.[0-9]|-) \| ([-+][0-9]+\.[0-9]{2}|-) \|.* \| ([0-9.]+) \| ([0-9.]+) \|)");
  int rows = 0, with_paper = 0;
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it) {
    ++rows;
    if ((*it)[5].str() != "-") {
      ++with_paper;
      EXPECT_NE((*it)[6].str(), "-") << (*it)[0].str();
    }
  }
  EXPECT_EQ(rows, 9) << table;
  EXPECT_EQ(with_paper, 8) << table;  // the linear decoder is our baseline
  EXPECT_NE(table.find("| vit_large_mita | ViT-L / 640², MiTA | 1 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| 50.5 |"), std::string::npos) << table;

  // Run again: every run is finished, so nothing trains (and the bench lines are reused).
  ASSERT_EQ(run_script(dir / "data", out, dir / "second.log"), 0) << read_file(dir / "second.log");
  const std::string again = read_file(dir / "second.log");
  EXPECT_EQ(occurrences(again, "finished (1 epochs), skipped"), 9) << again;
  EXPECT_EQ(occurrences(again, "bench vit_"), 0) << again;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
