// The stop machinery of a training run on its own: signals only set a flag while StopSignals lives (the process
// survives a SIGTERM and the old handler comes back afterwards), StopPoll reports the signal and the
// train.recovery_minutes timer, and the key is validated.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <csignal>

#include "engine/run_stop.h"
#include "io/config.h"
#include "test_util.h"

namespace vt::test {
namespace {

TEST(RunStop, SignalsSetTheFlagWhileInstalledAndTheOldHandlerReturns) {
  struct sigaction before = {};
  sigaction(SIGTERM, nullptr, &before);
  {
    engine::StopSignals signals;
    EXPECT_EQ(engine::StopSignals::received(), 0);
    std::raise(SIGUSR1);  // would end the process with the default action
    std::raise(SIGTERM);  // a later, different signal does not replace the first
    EXPECT_EQ(engine::StopSignals::received(), SIGUSR1);
  }
  struct sigaction after = {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  engine::StopSignals again;  // a fresh installation starts without a signal
  EXPECT_EQ(engine::StopSignals::received(), 0);
}

TEST(RunStop, PollReportsTheSignalAndTheRecoveryTimer) {
  io::Config cfg;
  engine::ProcessGroup single;
  int signal = 0;
  cfg.train.recovery_minutes = 0;  // off
  engine::StopPoll off(cfg, single, [&] { return signal; });
  EXPECT_EQ(off.poll().signal, 0);
  EXPECT_FALSE(off.poll().recovery_due);
  signal = SIGTERM;
  EXPECT_EQ(off.poll().signal, SIGTERM);

  cfg.train.recovery_minutes = 1e-6;  // 60 µs: due after the pause below (a bare 60 ns could read as not yet)
  engine::StopPoll timed(cfg, single, [] { return 0; });
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_TRUE(timed.poll().recovery_due);
  cfg.train.recovery_minutes = 60;
  engine::StopPoll hourly(cfg, single, [] { return 0; });
  EXPECT_FALSE(hourly.poll().recovery_due);
  EXPECT_EQ(engine::signal_name(SIGUSR1), "SIGUSR1");
}

TEST(RunStop, RecoveryMinutesMustBeANonNegativeNumber) {
  io::Config cfg;
  EXPECT_EQ(cfg.train.recovery_minutes, 30);
  cfg.train.recovery_minutes = -1;
  expect_error([&] { cfg.validate(); }, "train.recovery_minutes");
}

}  // namespace
}  // namespace vt::test
