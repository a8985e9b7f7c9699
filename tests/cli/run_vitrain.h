// Runs the built vitrain binary with arguments and captures its exit code and output (stdout + stderr), for the
// tests that exercise the command line.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

namespace vt::test {

struct CliRun {
  int code;
  std::string output;
};

/// `vitrain ARGS 2>&1` from this build's bin/; code -1 when the process did not exit normally.
inline CliRun run_vitrain(const std::string& args) {
  const std::string cmd = std::string(VT_BINARY_DIR) + "/bin/vitrain " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (p && fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int status = p ? pclose(p) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// `vitrain ARGS > OUT_FILE 2>&1` in the background, as its own process (the shell execs it), so a signal sent to
/// the returned pid reaches vitrain itself; -1 when fork fails.
inline pid_t start_vitrain(const std::string& args, const std::string& out_file) {
  const std::string cmd = "exec " + std::string(VT_BINARY_DIR) + "/bin/vitrain " + args + " > " + out_file + " 2>&1";
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace vt::test
