// Stopping a training run without losing work. While a StopSignals lives, SIGINT, SIGTERM and SIGUSR1 (SLURM's
// `--signal` warning before pre-emption) only set a flag: the loop finishes the update it is in, writes a
// recovery checkpoint and returns; the command then exits with 128 + the signal. A second SIGINT aborts at once.
// StopPoll, called once per update on every rank, turns the flag (and train.recovery_minutes) into one decision
// that all ranks share, so they stop, or write a timed recovery checkpoint, at the same update.
#pragma once
#include <functional>
#include <string>

#include "engine/process_group.h"
#include "engine/run_support.h"
#include "io/config.h"

namespace vt::engine {

/// Installs the handlers for its lifetime (nested or concurrent instances share one installation).
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// The first signal received while handlers were installed, or 0.
  static int received();
};

/// "SIGTERM", "SIGINT", "SIGUSR1", else "signal N".
std::string signal_name(int sig);

class StopPoll {
 public:
  /// `signal_source` replaces StopSignals::received() when set (tests: one rank of threads asks to stop).
  StopPoll(const io::Config& cfg, const ProcessGroup& group, std::function<int()> signal_source = {});

  struct Verdict {
    int signal = 0;             ///< non-zero: stop now (the signal this rank got, else one another rank got)
    bool recovery_due = false;  ///< train.recovery_minutes have passed since the last checkpoint (rank 0's clock)
  };
  /// Collective with several ranks (one small all-reduce): every rank must call it at the same update.
  Verdict poll();
  /// Restarts the recovery_minutes clock (call after every checkpoint).
  void checkpoint_written() { last_checkpoint_ = RunClock::now(); }

 private:
  const ProcessGroup& group_;
  double recovery_seconds_;
  std::function<int()> signal_source_;
  RunClock::time_point last_checkpoint_;
};

}  // namespace vt::engine
