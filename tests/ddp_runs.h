// Shared by the data-parallel tests (unit, e2e): the trainer run as a job of ranks in threads, each rank with a
// dist::ThreadCommunicator of one in-process group (TrainHooks::communicator).
#pragma once
#include <chrono>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "dist/thread_communicator.h"
#include "engine/trainer.h"
#include "io/config.h"

namespace vt::test {

/// Trains `cfg` as `world` ranks in threads and returns every rank's summary; rethrows the first rank's error.
inline std::vector<engine::TrainSummary> train_ranks(const io::Config& cfg, int world) {
  auto group = std::make_shared<dist::ThreadGroup>(world, std::chrono::seconds(120));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<engine::TrainSummary> summaries(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        dist::ThreadCommunicator comm(group, r);
        engine::TrainHooks hooks;
        hooks.communicator = &comm;
        summaries[static_cast<size_t>(r)] = engine::train(cfg, hooks);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return summaries;
}

}  // namespace vt::test
