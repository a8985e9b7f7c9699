// scripts/reproduce_table5.sh in its CI-sized form, end to end with the built vitrain: tiny data for the five LRA
// tasks in the release's layout (ListOps and Pathfinder from data/lra's generators; IMDB reviews, AAN pairs and
// CIFAR-10 records written here), every Table 5 config shrunk (width 16, one block, m = k = 4, sequences of 48)
// trained for two epochs of two updates on the CPU, and table5.md filled beside the paper's numbers; run again,
// every finished run is skipped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "data/lra/listops_generator.h"
#include "data/lra/pathfinder_generator.h"
#include "test_util.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A short text whose content depends on i (letters and spaces).
std::string words(int i) {
  std::string s;
  for (int k = 0; k < 12 + i % 9; ++k) s += static_cast<char>('a' + (i * 7 + k * 3) % 26), s += k % 4 == 3 ? " " : "";
  return s;
}

void write_tiny_lra(const fs::path& root) {
  data::lra::ListOpsOptions listops;
  listops.min_length = 8, listops.max_length = 48, listops.max_depth = 4;
  data::lra::write_listops_release(root.string(), 1, 16, 8, 8, listops);
  data::lra::write_pathfinder_release(root.string(), 2, 40);
  for (int i = 0; i < 24; ++i) {  // IMDB: <part>/<pos|neg>/<id>_<rating>.txt; LRA's text task reads train and test
    const std::string part = i < 16 ? "train" : "test", label = i % 2 ? "pos" : "neg";
    write_text(root / "aclImdb" / part / label / (std::to_string(i) + (i % 2 ? "_9.txt" : "_2.txt")), words(i));
  }
  for (const auto& [split, n] : {std::pair<std::string, int>{"train", 16}, {"eval", 8}, {"test", 8}}) {
    std::string tsv;  // AAN pairs: label, the two paper ids, the two texts
    for (int i = 0; i < n; ++i)
      tsv += std::to_string(i % 2) + "\tP" + std::to_string(i) + "\tQ" + std::to_string(i) + "\t" + words(i) + "\t" +
             words(i + 5) + "\n";
    write_text(root / "tsv_data" / ("new_aan_pairs." + split + ".tsv"), tsv);
  }
  auto record = [](int label, int shade) {  // CIFAR-10 binary: label byte, then 32x32 R, G and B planes
    std::string r(1 + 3072, static_cast<char>(shade));
    r[0] = static_cast<char>(label);
    for (int p = 0; p < 3072; p += 37) r[1 + p] = static_cast<char>((shade + p) % 256);
    return r;
  };
  for (int b = 1; b <= 5; ++b) {
    std::string batch;
    for (int k = 0; k < 6; ++k) batch += record((b + k) % 10, 20 * b + 3 * k);
    write_text(root / "cifar-10-batches-bin" / ("data_batch_" + std::to_string(b) + ".bin"), batch);
  }
  std::string test;
  for (int k = 0; k < 8; ++k) test += record(k % 10, 9 * k);
  write_text(root / "cifar-10-batches-bin" / "test_batch.bin", test);
}

int run_script(const fs::path& data, const fs::path& out, const fs::path& log) {
  const std::string cmd =
      "VITRAIN='" + std::string(VT_BINARY_DIR) +
      "/bin/vitrain' EPOCHS=2 DEVICE=cpu "
      "EXTRA_SET='model.embed_dim=16 model.depth=1 model.attention.m=4 model.attention.k=4 "
      "model.attention.agent_num=4 data.max_length=48 data.updates_per_epoch=2 train.global_batch_size=0 "
      "train.batch_size=4 train.threads=1 eval.batch_size=8 schedule.warmup_epochs=0.5' bash '" +
      std::string(VT_SOURCE_DIR) + "/scripts/reproduce_table5.sh' '" + data.string() + "' 1 '" + out.string() +
      "' > '" + log.string() + "' 2>&1";
  return std::system(cmd.c_str());
}

TEST(ReproduceTable5, CiSizedRunFillsTheTableBesideThePaper) {
  const fs::path dir = fs::temp_directory_path() / ("vt_e2e_table5_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write_tiny_lra(dir / "data");
  const fs::path out = dir / "out";
  ASSERT_EQ(run_script(dir / "data", out, dir / "first.log"), 0) << read_file(dir / "first.log");

  const std::string table = read_file(out / "table5.md");
  // A row: config | task | kind | steps | accuracy | paper accuracy | Δ | steps/s | paper steps/s | hours |
  const std::regex row(R"(\| ([a-z]+_(dense|mita|route_only|agent)) \| [^|]+ \| [a-z_]+ \| 4 \| ([0-9]+\.[0-9]{2}) \| )"
                       R"(([0-9]+\.[0-9]{2}|-) \| ([-+][0-9]+\.[0-9]{2}|-) \| ([0-9]+\.[0-9]{2}) \| ([0-9.]+|-) \| )"
                       R"(([0-9]+\.[0-9]{3}) \|)");
  int rows = 0, with_paper = 0;
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it) {
    ++rows;
    if ((*it)[4].str() != "-") {
      ++with_paper;
      EXPECT_NE((*it)[5].str(), "-") << (*it)[0].str();  // the difference is there when the paper's number is
    }
  }
  EXPECT_EQ(rows, 20) << table;
  EXPECT_EQ(with_paper, 10) << table;  // the paper reports dense and MiTA per task
  EXPECT_NE(table.find("| listops_mita | ListOps (2K) | mita | 4 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| 37.20 | "), std::string::npos) << table;
  // The per-kind summary: all five tasks for each kind we train, with the paper's average and hours.
  const std::regex kind_row(
      R"(\| (dense|mita|route_only|agent) \| 5 \| [0-9]+\.[0-9]{2} \| [0-9.]+ \| [-+][0-9]+\.[0-9]{2} \| )"
      R"([0-9]+\.[0-9]{2} \| [0-9.]+ \|)");
  EXPECT_EQ(std::distance(std::sregex_iterator(table.begin(), table.end(), kind_row), std::sregex_iterator()), 4)
      << table;
  EXPECT_NE(table.find("| moba_route_only | 0 | - | 56.74 | - | - | 4.6 |"), std::string::npos) << table;

  // Run again: every run is finished, so nothing trains.
  ASSERT_EQ(run_script(dir / "data", out, dir / "second.log"), 0) << read_file(dir / "second.log");
  EXPECT_EQ(occurrences(read_file(dir / "second.log"), "finished (2 epochs), skipped"), 20)
      << read_file(dir / "second.log");
  if (!std::getenv("VT_KEEP")) fs::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
