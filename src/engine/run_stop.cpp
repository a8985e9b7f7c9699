// Signal handlers and the per-update stop decision (see the header).
#include "engine/run_stop.h"

#include <csignal>
#include <mutex>
#include <vector>

namespace vt::engine {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGUSR1};

volatile std::sig_atomic_t g_received = 0;

// Async-signal-safe only: a flag, or for a second SIGINT the default action (the process ends at once).
extern "C" void on_stop_signal(int sig) {
  if (g_received != 0 && sig == SIGINT) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
    return;
  }
  if (g_received == 0) g_received = sig;
}

std::mutex g_mu;
int g_installs = 0;
struct sigaction g_old[3];

}  // namespace

StopSignals::StopSignals() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_installs++ > 0) return;
  g_received = 0;
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;  // reads, writes and waits elsewhere in the run carry on
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &g_old[i]);
}

StopSignals::~StopSignals() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (--g_installs > 0) return;
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &g_old[i], nullptr);
}

int StopSignals::received() { return g_received; }

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "signal " + std::to_string(sig);
  }
}

StopPoll::StopPoll(const io::Config& cfg, const ProcessGroup& group, std::function<int()> signal_source)
    : group_(group),
      recovery_seconds_(cfg.train.recovery_minutes * 60.0),
      signal_source_(signal_source ? std::move(signal_source) : [] { return StopSignals::received(); }),
      last_checkpoint_(RunClock::now()) {}

StopPoll::Verdict StopPoll::poll() {
  const int mine = signal_source_();
  const bool due = group_.lead() && recovery_seconds_ > 0 && seconds_since(last_checkpoint_) >= recovery_seconds_;
  if (!group_.comm || group_.world == 1) return {mine, due};
  // Per signal, how many ranks got it, and rank 0's timer: the same sums on every rank.
  std::vector<double> v{due ? 1.0 : 0.0};
  for (int s : kSignals) v.push_back(mine == s ? 1.0 : 0.0);
  v = dist::sum_over_ranks(*group_.comm, v, group_.device);
  Verdict verdict{mine, v[0] > 0};
  for (size_t i = 0; i < 3 && verdict.signal == 0; ++i)
    if (v[i + 1] > 0) verdict.signal = kSignals[i];
  return verdict;
}

}  // namespace vt::engine
