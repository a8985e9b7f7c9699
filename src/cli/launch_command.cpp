// The local launcher. Each rank is a fork + exec of /proc/self/exe with the torchrun variables set, so the
// ranks read their place with dist::launch_env() exactly as under torchrun. CUDA_VISIBLE_DEVICES is left
// alone: rank i uses cuda:LOCAL_RANK. The launcher polls its children (waitpid WNOHANG, 20 ms), because a
// signal arriving just before a blocking waitpid would otherwise go unforwarded until a child exits.
#include "cli/launch_command.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli/command_support.h"
#include "core/error.h"
#include "dist/tcp_socket.h"

extern char** environ;

namespace vt::cli {
namespace {

struct LaunchOptions {
  int nproc = 1;
  int master_port = 0;  // 0: a free port
  std::string exec;     // empty: this binary
  double grace_s = 10;  // between SIGTERM and SIGKILL
  std::vector<std::string> args;
};

volatile std::sig_atomic_t g_signal = 0;
extern "C" void record_signal(int sig) { g_signal = sig; }

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  VT_CHECK(!ec, "[launch] cannot find this binary (/proc/self/exe): ", ec.message());
  return p.string();
}

int free_port() {
  dist::Socket s = dist::listen_tcp(0);  // the kernel picks; closed again before the ranks start
  return dist::local_port(s);
}

std::string random_token() {
  std::random_device rd;
  std::string t;
  char buf[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(buf, sizeof(buf), "%08x", static_cast<unsigned>(rd()));
    t += buf;
  }
  return t;
}

// The parent's environment with `set` replacing variables of the same name.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const auto& [k, v] : set) replaced = replaced || k == key;
    if (!replaced) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "stopped with wait status " + std::to_string(status);
}

// Catches SIGINT/SIGTERM/SIGUSR1 into g_signal while it lives (no SA_RESTART: the polling loop sees the flag in
// 20 ms); wait_all forwards it to every rank.
class SignalCapture {
 public:
  SignalCapture() {
    struct sigaction sa = {};
    sa.sa_handler = record_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    sigaction(SIGUSR1, &sa, &old_usr1_);
  }
  ~SignalCapture() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGUSR1, &old_usr1_, nullptr);
  }

 private:
  struct sigaction old_int_ = {}, old_term_ = {}, old_usr1_ = {};
};

class Ranks {
 public:
  explicit Ranks(const LaunchOptions& o) : o_(o) {}

  // Starts every rank; returns the launcher's exit code once all have ended.
  int run() {
    const std::string program = o_.exec.empty() ? self_exe() : o_.exec;
    std::vector<std::string> argv{program};
    argv.insert(argv.end(), o_.args.begin(), o_.args.end());
    const int port = o_.master_port > 0 ? o_.master_port : free_port();
    const std::string token = random_token();
    std::fprintf(stderr, "launch: %d ranks of %s (rendezvous 127.0.0.1:%d)\n", o_.nproc, program.c_str(), port);
    std::fflush(stderr);

    SignalCapture capture;
    try {
      for (int r = 0; r < o_.nproc && !g_signal; ++r) start(r, program, argv, port, token);
      return wait_all();
    } catch (...) {
      stop_all(SIGKILL);
      wait_all();
      throw;
    }
  }

 private:
  void start(int rank, const std::string& program, std::vector<std::string> argv, int port, const std::string& token) {
    std::vector<std::pair<std::string, std::string>> set{{"RANK", std::to_string(rank)},
                                                         {"WORLD_SIZE", std::to_string(o_.nproc)},
                                                         {"LOCAL_RANK", std::to_string(rank)},
                                                         {"LOCAL_WORLD_SIZE", std::to_string(o_.nproc)},
                                                         {"MASTER_ADDR", "127.0.0.1"},
                                                         {"MASTER_PORT", std::to_string(port)},
                                                         {"VT_JOB_TOKEN", token}};
    if (!std::getenv("NCCL_NVLS_ENABLE")) set.push_back({"NCCL_NVLS_ENABLE", "0"});
    std::vector<std::string> env = child_environment(set);
    auto c_argv = c_strings(argv);
    auto c_env = c_strings(env);  // built before fork: the child only calls exec (async-signal-safe)
    const std::string exec_failed = "launch: cannot run " + program + " for rank " + std::to_string(rank) + "\n";
    const pid_t parent = ::getpid();
    // A stop signal sent to a rank between fork and exec would run the launcher's handler in the child and be lost
    // (the rank would then outlive its job until the grace period's SIGKILL): the child takes the stop signals
    // blocked, resets them to their default actions, and only then unblocks them.
    sigset_t stops, old_mask;
    sigemptyset(&stops);
    for (int s : {SIGINT, SIGTERM, SIGUSR1}) sigaddset(&stops, s);
    ::sigprocmask(SIG_BLOCK, &stops, &old_mask);
    const pid_t pid = ::fork();
    const int fork_errno = errno;
    if (pid != 0) ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    VT_CHECK(pid >= 0, "[launch] fork for rank ", rank, ": ", std::strerror(fork_errno));
    if (pid == 0) {
      struct sigaction default_action = {};
      default_action.sa_handler = SIG_DFL;
      for (int s : {SIGINT, SIGTERM, SIGUSR1}) ::sigaction(s, &default_action, nullptr);
      ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      // A launcher killed outright (SIGKILL, OOM) takes its ranks with it instead of leaving them hung in NCCL.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(1);
      // Its own process group: a Ctrl-C at the terminal reaches the ranks once, forwarded by the launcher, not
      // also directly (two SIGINTs would abort a rank instead of letting it write its recovery checkpoint).
      ::setpgid(0, 0);
      ::execvpe(program.c_str(), c_argv.data(), c_env.data());
      (void)!::write(2, exec_failed.data(), exec_failed.size());
      ::_exit(127);
    }
    pids_.push_back(pid);
    alive_.push_back(true);
  }

  void stop_all(int sig) {
    for (size_t r = 0; r < pids_.size(); ++r)
      if (alive_[r]) ::kill(pids_[r], sig);
  }

  int wait_all() {
    using Clock = std::chrono::steady_clock;
    std::optional<Clock::time_point> kill_at;
    const auto grace = std::chrono::milliseconds(static_cast<int64_t>(o_.grace_s * 1000));
    while (std::find(alive_.begin(), alive_.end(), true) != alive_.end()) {
      if (const int sig = g_signal) {
        g_signal = 0;
        if (!interrupted_) interrupted_ = sig;
        stop_all(sig);
        if (!kill_at) kill_at = Clock::now() + grace;
      }
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        const auto it = std::find(pids_.begin(), pids_.end(), pid);
        if (it == pids_.end()) continue;
        const size_t rank = static_cast<size_t>(it - pids_.begin());
        alive_[rank] = false;
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && !failure_ && !interrupted_) {
          failure_ = "rank " + std::to_string(rank) + " " + describe(status);
          std::fprintf(stderr, "launch: %s; stopping the other ranks\n", failure_->c_str());
          stop_all(SIGTERM);
          kill_at = Clock::now() + grace;
        }
        continue;
      }
      if (kill_at && Clock::now() >= *kill_at) {
        stop_all(SIGKILL);
        kill_at.reset();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (interrupted_) {
      std::fprintf(stderr, "launch: stopped by signal %d (%s); every rank has ended\n", interrupted_,
                   strsignal(interrupted_));
      return 128 + interrupted_;
    }
    if (failure_) {
      std::fprintf(stderr, "error: %s\n", failure_->c_str());
      return 1;
    }
    return 0;
  }

  const LaunchOptions& o_;
  std::vector<pid_t> pids_;
  std::vector<bool> alive_;
  int interrupted_ = 0;
  std::optional<std::string> failure_;
};

}  // namespace

void add_launch_command(CLI::App& app) {
  auto opts = std::make_shared<LaunchOptions>();
  auto* cmd = app.add_subcommand("launch",
                                 "start one training process per local GPU (torchrun-style variables), "
                                 "e.g. vitrain launch -n 8 -- train --config c.yaml");
  cmd->add_option("-n,--nproc-per-node", opts->nproc, "number of ranks (rank i uses cuda:i)")
      ->required()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--master-port", opts->master_port, "rendezvous port on 127.0.0.1 (default: a free port)")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--exec", opts->exec, "start PROGRAM instead of vitrain (the arguments after -- go to it)");
  cmd->add_option("--grace-period", opts->grace_s, "seconds between SIGTERM and SIGKILL when stopping ranks")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("args", opts->args, "after --: the vitrain command each rank runs (e.g. train --config c.yaml)");
  cmd->footer("The rank's command goes after --, so its options are not read as launch's.");
  cmd->callback([opts] {
    // `scripts/launch.sh -n 8 -- vitrain train ...` passes the program name too.
    if (opts->exec.empty() && !opts->args.empty() && std::filesystem::path(opts->args.front()).filename() == "vitrain")
      opts->args.erase(opts->args.begin());
    finish_command([&] {
      VT_CHECK(!opts->args.empty() || !opts->exec.empty(),
               "[launch] nothing to run: vitrain launch -n N -- train --config c.yaml");
      return Ranks(*opts).run();
    });
  });
}

}  // namespace vt::cli
