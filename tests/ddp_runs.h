// Shared by the data-parallel tests (unit, e2e): the trainer run as a job of ranks in threads, each rank with a
// dist::ThreadCommunicator of one in-process group (TrainHooks::communicator).
#pragma once
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "dist/thread_communicator.h"
#include "engine/trainer.h"
#include "io/config.h"

namespace vt::test {

/// Runs fn(comm) on `world` threads, each with the ThreadCommunicator of its rank in one group; rethrows the first
/// rank's error after all have ended.
inline void run_ranks(int world, const std::function<void(dist::ThreadCommunicator&)>& fn,
                      std::chrono::seconds timeout = std::chrono::seconds(120)) {
  auto group = std::make_shared<dist::ThreadGroup>(world, timeout);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        dist::ThreadCommunicator comm(group, r);
        fn(comm);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// Trains `cfg` as `world` ranks in threads and returns every rank's summary; rethrows the first rank's error.
inline std::vector<engine::TrainSummary> train_ranks(const io::Config& cfg, int world) {
  std::vector<engine::TrainSummary> summaries(static_cast<size_t>(world));
  run_ranks(world, [&](dist::ThreadCommunicator& comm) {
    engine::TrainHooks hooks;
    hooks.communicator = &comm;
    summaries[static_cast<size_t>(comm.rank())] = engine::train(cfg, hooks);
  });
  return summaries;
}

}  // namespace vt::test
