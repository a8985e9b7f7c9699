// `vitrain launch`: each rank gets its torchrun-style variables, and one failing rank stops the others and makes
// the launcher fail naming it; signals are forwarded to every rank. The ranks run /bin/sh through --exec, so the test needs no GPU and no training.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "cli/run_vitrain.h"

namespace {

using vt::test::CliRun;
using vt::test::run_vitrain;

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

TEST(Launch, EveryRankGetsItsEnvironment) {
  unsetenv("NCCL_NVLS_ENABLE");  // the launcher's default applies
  CliRun r = run_vitrain(
      "launch -n 2 --exec /bin/sh -- -c "
      "'echo \"rank=$RANK/$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE addr=$MASTER_ADDR "
      "nvls=$NCCL_NVLS_ENABLE token=${#VT_JOB_TOKEN} port=${MASTER_PORT:+set}\"'");
  EXPECT_EQ(r.code, 0) << r.output;
  for (const char* rank : {"rank=0/2 local=0/2", "rank=1/2 local=1/2"})
    EXPECT_TRUE(has(r.output, std::string(rank) + " addr=127.0.0.1 nvls=0 token=32 port=set")) << r.output;
}

TEST(Launch, UserNcclNvlsSettingWins) {
  setenv("NCCL_NVLS_ENABLE", "1", 1);  // the default (0) is checked above
  CliRun r = run_vitrain("launch -n 1 --exec /bin/sh -- -c 'echo nvls=$NCCL_NVLS_ENABLE'");
  unsetenv("NCCL_NVLS_ENABLE");
  EXPECT_TRUE(has(r.output, "nvls=1")) << r.output;
}

TEST(Launch, RunsThisBinaryByDefault) {
  // `-- vitrain --help` as scripts/launch.sh passes it: the program name is dropped, each rank prints the help.
  CliRun r = run_vitrain("launch -n 2 -- vitrain --help");
  EXPECT_EQ(r.code, 0) << r.output;
  size_t count = 0;
  for (size_t at = r.output.find("Subcommands:"); at != std::string::npos; at = r.output.find("Subcommands:", at + 1))
    ++count;
  EXPECT_EQ(count, 2u) << r.output;
}

TEST(Launch, OneFailingRankStopsTheOthersAndIsNamed) {
  const auto start = std::chrono::steady_clock::now();
  CliRun r = run_vitrain(
      "launch -n 3 --grace-period 60 --exec /bin/sh -- -c "
      "'if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 120'");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "error: rank 1 exited with status 3")) << r.output;
  // Not a timing test: without SIGTERM working the ranks would live until the SIGKILL after the 60 s grace
  // period; 30 s leaves a loaded machine room to start three processes.
  EXPECT_LT(seconds, 30.0) << "the sleeping ranks were not stopped by SIGTERM";
}

// SIGUSR1 (SLURM's pre-emption warning) reaches every rank through the launcher, which then exits with 128 + 10.
TEST(Launch, ForwardsSigusrOneToEveryRank) {
  const std::string out = "/tmp/vt_launch_usr1_" + std::to_string(::getpid()) + ".out";
  const pid_t pid = vt::test::start_vitrain(
      "launch -n 2 --exec /bin/sh -- -c 'trap \"echo rank $RANK got USR1; exit 0\" USR1; echo ready $RANK; "
      "while :; do sleep 0.05; done'",
      out);
  ASSERT_GT(pid, 0);
  auto text = [&] {
    std::ifstream f(out);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  for (int i = 0; i < 3000 && !(has(text(), "ready 0") && has(text(), "ready 1")); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(has(text(), "ready 0") && has(text(), "ready 1")) << text();
  kill(pid, SIGUSR1);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << text();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGUSR1) << text();
  EXPECT_TRUE(has(text(), "rank 0 got USR1") && has(text(), "rank 1 got USR1")) << text();
  std::remove(out.c_str());
}

TEST(Launch, NothingToRunIsAnError) {
  CliRun r = run_vitrain("launch -n 2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "nothing to run")) << r.output;
}

}  // namespace
