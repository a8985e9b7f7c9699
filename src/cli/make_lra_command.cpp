#include "cli/make_lra_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/command_support.h"
#include "core/error.h"
#include "data/lra/listops_generator.h"
#include "data/lra/pathfinder_generator.h"
#include "data/lra/pathfinder_reader.h"

namespace vt::cli {
namespace {

struct MakeLraArgs {
  std::string task, out_dir;
  uint64_t seed = 0;
  int64_t train = -1, val = -1, test = -1;  // -1: the task's LRA size
};

// One line each time another tenth is done.
std::function<void(int64_t, int64_t)> progress_printer(const std::string& what) {
  auto last = std::make_shared<int64_t>(-1);
  return [what, last](int64_t done, int64_t total) {
    const int64_t tenth = total > 0 ? done * 10 / total : 10;
    if (tenth == *last) return;
    *last = tenth;
    std::printf("%s: %lld / %lld\n", what.c_str(), static_cast<long long>(done), static_cast<long long>(total));
    std::fflush(stdout);
  };
}

int run_make_lra(MakeLraArgs a) {
  if (a.task == "listops") {
    // LRA's release: 96000 / 2000 / 2000.
    if (a.train < 0) a.train = 96000;
    if (a.val < 0) a.val = 2000;
    if (a.test < 0) a.test = 2000;
    data::lra::write_listops_release(a.out_dir, a.seed, a.train, a.val, a.test, {},
                                     progress_printer("listops examples"));
    std::printf("wrote %lld ListOps examples (train %lld, val %lld, test %lld) to %s/listops-1000\n",
                static_cast<long long>(a.train + a.val + a.test), static_cast<long long>(a.train),
                static_cast<long long>(a.val), static_cast<long long>(a.test), a.out_dir.c_str());
    return 0;
  }
  // Pathfinder's splits are cut from one pool by the reader (80/10/10, as LRA), so the counts must be that split.
  if (a.train < 0) a.train = 160000;
  if (a.val < 0) a.val = 20000;
  if (a.test < 0) a.test = 20000;
  const int64_t pool = a.train + a.val + a.test;
  VT_CHECK(data::lra::pathfinder_split_size(pool, "train") == a.train &&
               data::lra::pathfinder_split_size(pool, "val") == a.val,
           "pathfinder: --train ", a.train, " --val ", a.val, " --test ", a.test,
           " is not LRA's 80/10/10 split of one pool of ", pool, " images, which is what the reader cuts (",
           data::lra::pathfinder_split_size(pool, "train"), " / ", data::lra::pathfinder_split_size(pool, "val"), " / ",
           data::lra::pathfinder_split_size(pool, "test"), "); give e.g. --train 800 --val 100 --test 100");
  VT_CHECK(pool > 0, "pathfinder: the pool is empty (give --train, --val and --test)");
  data::lra::write_pathfinder_release(a.out_dir, a.seed, pool, {}, progress_printer("pathfinder images"));
  std::printf("wrote %lld Pathfinder images (train %lld, val %lld, test %lld after the split) to %s/%s\n",
              static_cast<long long>(pool), static_cast<long long>(a.train), static_cast<long long>(a.val),
              static_cast<long long>(a.test), a.out_dir.c_str(), data::lra::kPathfinderFolder);
  return 0;
}

}  // namespace

void add_make_lra_command(CLI::App& data) {
  auto args = std::make_shared<MakeLraArgs>();
  auto* cmd = data.add_subcommand(
      "make-lra", "generate a ListOps or Pathfinder set of our own in the Long Range Arena release's layout");
  cmd->add_option("task", args->task, "listops or pathfinder")
      ->required()
      ->check(CLI::IsMember({"listops", "pathfinder"}));
  cmd->add_option("out_dir", args->out_dir,
                  "data root to write into (listops-1000/ or pathfinder32/curv_contour_length_14/ below it)")
      ->required();
  cmd->add_option("--seed", args->seed, "every example is a function of the seed and its index")->capture_default_str();
  const CLI::Range kCounts(int64_t{0}, int64_t{1000000000});
  const char* counts = " (default: LRA's size: listops 96000 / 2000 / 2000, pathfinder 160000 / 20000 / 20000)";
  cmd->add_option("--train", args->train, std::string("training examples") + counts)->check(kCounts);
  cmd->add_option("--val", args->val, "validation examples")->check(kCounts);
  cmd->add_option("--test", args->test, "test examples")->check(kCounts);
  cmd->callback([args] { finish_command([&] { return run_make_lra(*args); }); });
}

}  // namespace vt::cli
