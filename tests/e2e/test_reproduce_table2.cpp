// scripts/reproduce_table2.sh in its CI-sized form, end to end with the built vitrain: on a tiny generated
// ImageFolder, every Table 2 config shrunk (32² inputs, patch 8, depth 1, as test_imagefolder_train.cpp) benches
// (vit_micro stands in for the 224² presets), prints the estimate, trains one epoch on the CPU and lands in
// table2.md beside the paper's numbers; run again, every finished run is skipped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "data/image_writers.h"
#include "test_util.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

// 3 classes x (8 train + 4 val) JPEGs of 40x40.
void write_tree(const fs::path& root) {
  for (int c = 0; c < 3; ++c) {
    for (const auto& [split, n] : {std::pair<std::string, int>{"train", 8}, {"val", 4}}) {
      const fs::path dir = root / split / ("class" + std::to_string(c));
      fs::create_directories(dir);
      for (int i = 0; i < n; ++i)
        write_jpeg_rgb((dir / (std::to_string(i) + ".jpg")).string(), pattern_rgb(40, 40, 10 * c + i % 3));
    }
  }
}

// Runs the script with the CI-sized knobs; its console output goes to `log`. Returns the exit status.
int run_script(const fs::path& data, const fs::path& out, const fs::path& log) {
  const std::string cmd =
      "VITRAIN='" + std::string(VT_BINARY_DIR) +
      "/bin/vitrain' EPOCHS=1 BATCH=8 DEVICE=cpu BENCH_MODEL=vit_micro "
      "BENCH_M=4 BENCH_K=4 BENCH_N_WIN=2 BENCH_TOPK=2 BENCH_BATCH=2 BENCH_STEPS=1 BENCH_WARMUP=0 "
      "BENCH_EXTRA='--threads 1' "
      "EXTRA_SET='data.workers=2 model.img_size=32 model.patch_size=8 model.num_classes=3 model.embed_dim=48 "
      "model.num_heads=3 model.depth=1 model.attention.m=4 model.attention.k=4 model.attention.agent_num=4 "
      "model.attention.n_win=2 model.attention.topk=2 train.threads=2 eval.batch_size=8 schedule.warmup_epochs=0' bash "
      "'" +
      std::string(VT_SOURCE_DIR) + "/scripts/reproduce_table2.sh' '" + data.string() + "' 1 '" + out.string() +
      "' > '" + log.string() + "' 2>&1";
  return std::system(cmd.c_str());
}

TEST(ReproduceTable2, CiSizedRunFillsTheTableBesideThePaper) {
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_table2_" + std::to_string(::getpid()));
  write_tree(dir / "data");
  const fs::path out = dir / "out";
  ASSERT_EQ(run_script(dir / "data", out, dir / "first.log"), 0) << read_file(dir / "first.log");

  const std::string console = read_file(dir / "first.log");
  EXPECT_NE(console.find("Estimated cost on this hardware (24 training images"), std::string::npos) << console;
  EXPECT_TRUE(std::regex_search(console, std::regex(R"(\ntotal +[0-9.]+ +[0-9.]+\n)"))) << console;

  const std::string table = read_file(out / "table2.md");
  // A row: config | row | epochs | top-1 | EMA top-1 | paper top-1 | Δ | ... | img/s |
  const std::regex row(R"(\| (deit_(tiny|small)_[a-z_]+) \| [^|]+ \| 1 \| ([0-9]+\.[0-9]{2}) \| ([0-9]+\.[0-9]{2}) \| )"
                       R"(([0-9]+\.[0-9]|-) \| ([-+][0-9]+\.[0-9]{2}|-) \|.* \| ([0-9]+) \|)");
  int rows = 0, with_paper = 0;
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it) {
    ++rows;
    const std::string paper = (*it)[5];
    if (paper != "-") {
      ++with_paper;
      EXPECT_NE((*it)[6].str(), "-") << (*it)[0].str();  // the difference is there when the paper's number is
    }
  }
  EXPECT_EQ(rows, 24) << table;
  EXPECT_EQ(with_paper, 12)
      << table;  // the paper reports neither DeiT-T + Gate, DeiT-S linear, the linear baselines nor BRA
  EXPECT_NE(table.find("| deit_small_mita_dwc_gate | DeiT-S, MiTA + DWC + Gate | 1 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| 81.2 |"), std::string::npos) << table;

  // Run again: every run is finished, so nothing trains (and the bench lines are reused).
  ASSERT_EQ(run_script(dir / "data", out, dir / "second.log"), 0) << read_file(dir / "second.log");
  const std::string again = read_file(dir / "second.log");
  EXPECT_EQ(occurrences(again, "finished (1 epochs), skipped"), 24) << again;
  EXPECT_EQ(occurrences(again, "bench deit_"), 0) << again;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
