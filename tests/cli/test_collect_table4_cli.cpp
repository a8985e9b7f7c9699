// scripts/collect_table4.sh on hand-written metrics: Table 4's headline mIoU is the final evaluation (the last
// checkpoint, as Segmenter reports), the best evaluation stands beside it, and Δ is taken from the final one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CollectTable4, HeadlineIsTheFinalEvaluationWithTheBestBeside) {
  const fs::path out = fs::temp_directory_path() / ("vt_collect_table4_" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out / "vit_tiny_mita");
  {  // training rows, then evaluations at epochs 2, 4, 6: best 40.1 at epoch 4, final 39.5
    std::ofstream m(out / "vit_tiny_mita" / "metrics.jsonl");
    m << "{\"epoch\": 1, \"step\": 10, \"loss\": 2.5}\n"
      << "{\"epoch\": 2, \"miou\": 38.25, \"macc\": 50.0}\n"
      << "{\"epoch\": 4, \"miou\": 40.1, \"macc\": 51.0}\n"
      << "{\"epoch\": 6, \"miou\": 39.5, \"macc\": 50.5}\n";
  }
  {  // the ViT-T rows of the paper's table only (`vitrain flops` of the large configs takes a while)
    std::ifstream paper(fs::path(VT_SOURCE_DIR) / "configs" / "ade20k" / "paper_table4.tsv");
    std::ofstream tiny(out / "paper.tsv");
    for (std::string line; std::getline(paper, line);)
      if (line.rfind("vit_tiny_", 0) == 0) tiny << line << '\n';
  }
  const std::string cmd = "PAPER_TSV='" + (out / "paper.tsv").string() + "' VITRAIN='" + std::string(VT_BINARY_DIR) +
                          "/bin/vitrain' bash '" + std::string(VT_SOURCE_DIR) + "/scripts/collect_table4.sh' '" +
                          out.string() + "' > '" + (out / "log").string() + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_all(out / "log");
  const std::string table = read_all(out / "table4.md");
  EXPECT_NE(table.find("| config | row | epochs | mIoU (final) | best | paper mIoU | Δ |"), std::string::npos) << table;
  // config | row | epochs | final | best | paper | Δ = 39.50 − 36.5
  EXPECT_NE(table.find("| vit_tiny_mita | ViT-T / 512², MiTA | 6 | 39.50 | 40.10 | 36.5 | +3.00 |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("| vit_tiny_dense | ViT-T / 512², standard attention | not run | - | - | 39.1 | - |"),
            std::string::npos)
      << table;
  fs::remove_all(out);
}

}  // namespace
