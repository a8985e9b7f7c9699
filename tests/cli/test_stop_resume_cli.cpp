// Stopping and resuming `vitrain train` as a user or a cluster does: SIGTERM / SIGUSR1 mid-run write a recovery
// checkpoint and exit with 128 + the signal, `--resume auto` then ends with the weights of an uninterrupted run
// bit for bit; a second SIGINT aborts at once; `--resume auto` passes over a damaged last.safetensors naming it;
// metrics.jsonl holds each update and evaluation once after resumes; a finished run resumes to a clear exit 0.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "cli/run_vitrain.h"
#include "io/metrics.h"
#include "io/config.h"
#include "test_util.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

bool have_data() { return fs::exists(vt::test::fmnist_dir()); }

struct RunDir {
  fs::path root = fs::temp_directory_path() / ("vt_stop_cli_" + std::to_string(::getpid()) + "_" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  RunDir() {
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~RunDir() { fs::remove_all(root); }
  std::string out(const std::string& name) const { return (root / name).string(); }
};

// The README demo config shrunk to a CPU-sized run: 2 epochs of 100 updates of a one-block model (a second or
// two), every update logged.
std::string tiny_args(const std::string& output, const std::string& extra = "") {
  return "train --config " + std::string(VT_SOURCE_DIR) +
         "/configs/fashion_mnist_vit.yaml --device cpu"
         " --set data.train_limit=3200 --set data.test_limit=64 --set train.epochs=2 --set train.batch_size=32"
         " --set train.threads=1 --set train.log_interval=1 --set model.depth=1 --set model.embed_dim=32"
         " --set model.num_heads=2 --set train.output=" +
         output + " " + extra;
}

// Waits (up to 60 s) until `path` contains `needle`.
bool wait_for_text(const fs::path& path, const std::string& needle) {
  for (int i = 0; i < 6000; ++i) {
    if (read_file(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int wait_status(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// Starts a tiny run in `output`, sends `sig` once its third update is logged, and returns its wait status.
int interrupted_run(const RunDir& dir, const std::string& output, int sig) {
  const std::string log = dir.out(output + ".out");
  const pid_t pid = start_vitrain(tiny_args(dir.out(output)), log);
  EXPECT_GT(pid, 0);
  EXPECT_TRUE(wait_for_text(dir.out(output) + "/train.log", "[   3/ 100]")) << read_file(log);
  kill(pid, sig);
  return wait_status(pid);
}

// Every update row's step and every evaluation row's epoch of a metrics.jsonl, counted.
void expect_each_row_once(const std::string& metrics, int64_t updates, int64_t epochs) {
  std::map<double, int> steps, evals;
  for (const auto& row : io::read_metrics(metrics)) {
    if (row.count("train_loss")) ++steps[row.at("step")];
    else ++evals[row.at("epoch")];
  }
  EXPECT_EQ(static_cast<int64_t>(steps.size()), updates);
  EXPECT_EQ(static_cast<int64_t>(evals.size()), epochs);
  for (auto [step, n] : steps) EXPECT_EQ(n, 1) << "update " << step;
  for (auto [epoch, n] : evals) EXPECT_EQ(n, 1) << "evaluation of epoch " << epoch;
}

TEST(StopResumeCli, SigtermWritesARecoveryCheckpointAndResumesToTheUninterruptedWeights) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  RunDir dir;
  const CliRun straight = run_vitrain(tiny_args(dir.out("straight")));
  ASSERT_EQ(straight.code, 0) << straight.output;

  const int status = interrupted_run(dir, "stopped", SIGTERM);
  const std::string said = read_file(dir.out("stopped.out"));
  ASSERT_TRUE(WIFEXITED(status)) << said;
  EXPECT_EQ(WEXITSTATUS(status), 143) << said;
  EXPECT_NE(said.find("SIGTERM received: stopped in epoch "), std::string::npos) << said;
  EXPECT_NE(said.find("recovery.safetensors"), std::string::npos) << said;
  ASSERT_TRUE(fs::exists(dir.out("stopped/recovery.safetensors")));
  EXPECT_FALSE(fs::exists(dir.out("stopped/model.safetensors")));  // it did stop before the end

  const CliRun resumed = run_vitrain(tiny_args(dir.out("stopped"), "--resume auto"));
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming from " + dir.out("stopped/recovery.safetensors")), std::string::npos)
      << resumed.output;
  const std::string want = read_file(dir.out("straight/model.safetensors"));
  ASSERT_FALSE(want.empty());
  EXPECT_TRUE(read_file(dir.out("stopped/model.safetensors")) == want) << "resumed weights differ";
  expect_each_row_once(dir.out("stopped/metrics.jsonl"), 200, 2);
}

TEST(StopResumeCli, SigusrOneStopsLikeAPreemptionWarning) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  RunDir dir;
  const int status = interrupted_run(dir, "run", SIGUSR1);
  const std::string said = read_file(dir.out("run.out"));
  ASSERT_TRUE(WIFEXITED(status)) << said;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGUSR1) << said;
  EXPECT_NE(said.find("SIGUSR1 received"), std::string::npos) << said;
  EXPECT_NE(said.find("stopped by SIGUSR1 after"), std::string::npos) << said;
  EXPECT_TRUE(fs::exists(dir.out("run/recovery.safetensors")));
}

TEST(StopResumeCli, ASecondSigintAbortsAtOnce) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  RunDir dir;
  const std::string log = dir.out("run.out");
  // A wider model, so one update takes most of a second: both signals land inside the same update.
  const pid_t pid = start_vitrain(tiny_args(dir.out("run"),
                                            "--set model.embed_dim=192 --set model.depth=4 "
                                            "--set train.batch_size=128 --set train.epochs=1"),
                                  log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_for_text(dir.out("run/train.log"), "[   1/  25]")) << read_file(log);
  kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // delivered, well inside the update
  kill(pid, SIGINT);
  const int status = wait_status(pid);
  const std::string said = read_file(log);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status) << "\n" << said;
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_EQ(said.find("SIGINT received"), std::string::npos) << said;  // it did not wait for the update to end
}

TEST(StopResumeCli, AutoResumeSkipsADamagedLastCheckpointNamingBoth) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  RunDir dir;
  const std::string no_epoch_files = "--set train.checkpoint_interval=0 --set train.recovery_interval=150";
  const CliRun straight = run_vitrain(tiny_args(dir.out("run"), no_epoch_files));
  ASSERT_EQ(straight.code, 0) << straight.output;
  const std::string want = read_file(dir.out("run/model.safetensors"));
  // last holds update 200, recovery update 150: cut last in half.
  const fs::path last = dir.out("run/last.safetensors");
  fs::resize_file(last, fs::file_size(last) / 2);
  fs::remove(dir.out("run/model.safetensors"));

  const CliRun resumed = run_vitrain(tiny_args(dir.out("run"), no_epoch_files + " --resume auto"));
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("--resume auto: skipping " + last.string()), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("--resume auto: taking " + dir.out("run/recovery.safetensors") + " (150 updates)"),
            std::string::npos)
      << resumed.output;
  EXPECT_TRUE(read_file(dir.out("run/model.safetensors")) == want) << "resumed weights differ";
  expect_each_row_once(dir.out("run/metrics.jsonl"), 200, 2);
}

TEST(StopResumeCli, ResumingAFinishedRunSaysSoAndExitsZero) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  RunDir dir;
  ASSERT_EQ(run_vitrain(tiny_args(dir.out("run"))).code, 0);
  const std::string metrics = read_file(dir.out("run/metrics.jsonl"));
  const CliRun again = run_vitrain(tiny_args(dir.out("run"), "--resume auto"));
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("already finished (200 updates)"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("0.00%"), std::string::npos) << again.output;
  EXPECT_EQ(read_file(dir.out("run/metrics.jsonl")), metrics);
}

TEST(StopResumeCli, AFinishedRunKilledBeforeItsWeightsWereWrittenGetsThemFromTheLastCheckpoint) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  RunDir dir;
  ASSERT_EQ(run_vitrain(tiny_args(dir.out("run"))).code, 0);
  const std::string weights = dir.out("run/model.safetensors");
  const std::string want = read_file(weights);
  ASSERT_FALSE(want.empty());
  fs::remove(weights);  // as after a kill -9 between the last checkpoint and the final save
  const CliRun again = run_vitrain(tiny_args(dir.out("run"), "--resume auto"));
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("already finished (200 updates)"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find(weights + " was missing"), std::string::npos) << again.output;
  EXPECT_TRUE(read_file(weights) == want) << "the rewritten weights differ from the run's";
}

}  // namespace
}  // namespace vt::test
