// `vitrain data make-lra` end to end: what it writes reads back through load_sequence_set, the seed decides the
// files, and bad arguments end with one clear error.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/run_vitrain.h"
#include "data/lra/listops_generator.h"
#include "data/lra/sequence_set.h"
#include "test_util.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

bool vitrain_built() { return std::filesystem::exists(std::string(VT_BINARY_DIR) + "/bin/vitrain"); }

TEST(LraCli, MakeListOpsWritesTheReleaseLayoutFromTheSeed) {
  if (!vitrain_built()) GTEST_SKIP() << "vitrain not built";
  TempDir a, b, c;
  const CliRun run =
      run_vitrain("data make-lra listops " + a.path().string() + " --seed 5 --train 20 --val 3 --test 2");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "wrote 25 ListOps examples (train 20, val 3, test 2)");
  const data::lra::SequenceSet val = data::lra::load_sequence_set("listops", a.path().string(), "val", 0);
  ASSERT_EQ(val.examples.size(), 3u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(val.examples[static_cast<size_t>(i)].label, data::lra::generate_listops_example(5, 1, i, {}).value);
  ASSERT_EQ(run_vitrain("data make-lra listops " + b.path().string() + " --seed 5 --train 20 --val 3 --test 2").code,
            0);
  ASSERT_EQ(run_vitrain("data make-lra listops " + c.path().string() + " --seed 6 --train 20 --val 3 --test 2").code,
            0);
  const std::string file = "listops-1000/basic_train.tsv";
  EXPECT_EQ(read_file(a.path() / file), read_file(b.path() / file));
  EXPECT_NE(read_file(a.path() / file), read_file(c.path() / file));
}

TEST(LraCli, MakePathfinderWritesAPoolTheReaderSplits) {
  if (!vitrain_built()) GTEST_SKIP() << "vitrain not built";
  TempDir dir;
  const CliRun run = run_vitrain("data make-lra pathfinder " + dir.path().string() + " --train 80 --val 10 --test 10");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "pathfinder images: 100 / 100");
  EXPECT_EQ(data::lra::load_sequence_set("pathfinder", dir.path().string(), "train", 0).examples.size(), 80u);
  EXPECT_EQ(data::lra::load_sequence_set("pathfinder", dir.path().string(), "val", 0).examples.size(), 10u);
  EXPECT_EQ(data::lra::load_sequence_set("pathfinder", dir.path().string(), "test", 0).examples.size(), 10u);
}

TEST(LraCli, BadArgumentsEndWithOneClearError) {
  if (!vitrain_built()) GTEST_SKIP() << "vitrain not built";
  TempDir dir;
  const CliRun task = run_vitrain("data make-lra imdb " + dir.path().string());
  EXPECT_NE(task.code, 0);
  EXPECT_CONTAINS(task.output, "imdb not in {listops,pathfinder}");
  const CliRun negative = run_vitrain("data make-lra listops " + dir.path().string() + " --train -3");
  EXPECT_NE(negative.code, 0);
  EXPECT_CONTAINS(negative.output, "--train: Value -3 not in range");
  const CliRun ratio = run_vitrain("data make-lra pathfinder " + dir.path().string() + " --train 800");
  EXPECT_EQ(ratio.code, 1);
  EXPECT_CONTAINS(ratio.output, "error: pathfinder: --train 800 --val 20000 --test 20000 is not LRA's 80/10/10");
  write_bytes(dir.file("a_file"), "x");
  const CliRun file = run_vitrain("data make-lra listops " + dir.file("a_file") + " --train 1 --val 1 --test 1");
  EXPECT_EQ(file.code, 1);
  EXPECT_CONTAINS(file.output, "error: [data] cannot create " + dir.file("a_file") + "/listops-1000");
  EXPECT_EQ(occurrences(file.output, "error:"), 1) << file.output;
  const std::string small = " --train 8 --val 1 --test 1";
  ASSERT_EQ(run_vitrain("data make-lra pathfinder " + dir.path().string() + small).code, 0);
  const CliRun again = run_vitrain("data make-lra pathfinder " + dir.path().string() + small);
  EXPECT_EQ(again.code, 1);
  EXPECT_CONTAINS(again.output, "pathfinder32/curv_contour_length_14 already exists and is not empty");
  EXPECT_CONTAINS(run_vitrain("data make-lra --help").output, "--seed");
}

}  // namespace
}  // namespace vt::test
