// `vitrain launch`: each rank gets its torchrun-style variables, and one failing rank stops the others and makes
// the launcher fail naming it. The ranks run /bin/sh through --exec, so the test needs no GPU and no training.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct CliRun {
  int code;
  std::string output;
};

CliRun run(const std::string& args) {
  std::string cmd = std::string(VT_BINARY_DIR) + "/bin/vitrain " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (p && fgets(buf.data(), buf.size(), p)) out += buf.data();
  int status = p ? pclose(p) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

TEST(Launch, EveryRankGetsItsEnvironment) {
  unsetenv("NCCL_NVLS_ENABLE");  // the launcher's default applies
  CliRun r =
      run("launch -n 2 --exec /bin/sh -- -c "
          "'echo \"rank=$RANK/$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE addr=$MASTER_ADDR "
          "nvls=$NCCL_NVLS_ENABLE token=${#VT_JOB_TOKEN} port=${MASTER_PORT:+set}\"'");
  EXPECT_EQ(r.code, 0) << r.output;
  for (const char* rank : {"rank=0/2 local=0/2", "rank=1/2 local=1/2"})
    EXPECT_TRUE(has(r.output, std::string(rank) + " addr=127.0.0.1 nvls=0 token=32 port=set")) << r.output;
}

TEST(Launch, UserNcclNvlsSettingWins) {
  setenv("NCCL_NVLS_ENABLE", "1", 1);  // the default (0) is checked above
  CliRun r = run("launch -n 1 --exec /bin/sh -- -c 'echo nvls=$NCCL_NVLS_ENABLE'");
  unsetenv("NCCL_NVLS_ENABLE");
  EXPECT_TRUE(has(r.output, "nvls=1")) << r.output;
}

TEST(Launch, RunsThisBinaryByDefault) {
  // `-- vitrain --help` as scripts/launch.sh passes it: the program name is dropped, each rank prints the help.
  CliRun r = run("launch -n 2 -- vitrain --help");
  EXPECT_EQ(r.code, 0) << r.output;
  size_t count = 0;
  for (size_t at = r.output.find("Subcommands:"); at != std::string::npos; at = r.output.find("Subcommands:", at + 1))
    ++count;
  EXPECT_EQ(count, 2u) << r.output;
}

TEST(Launch, OneFailingRankStopsTheOthersAndIsNamed) {
  const auto start = std::chrono::steady_clock::now();
  CliRun r =
      run("launch -n 3 --grace-period 60 --exec /bin/sh -- -c "
          "'if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 120'");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "error: rank 1 exited with status 3")) << r.output;
  // Not a timing test: without SIGTERM working the ranks would live until the SIGKILL after the 60 s grace
  // period; 30 s leaves a loaded machine room to start three processes.
  EXPECT_LT(seconds, 30.0) << "the sleeping ranks were not stopped by SIGTERM";
}

TEST(Launch, NothingToRunIsAnError) {
  CliRun r = run("launch -n 2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "nothing to run")) << r.output;
}

}  // namespace
