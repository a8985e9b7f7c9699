// StreamGate: holds a stream at a host function until open() (or 20 s pass). Tests use it to check that host calls
// return while device work is still queued (no hidden synchronization), and that memory used by queued work is not
// handed out again before that work has run.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "kernels/cuda/check.h"

namespace vt::test {

class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) { VT_CUDA_CHECK(cudaLaunchHostFunc(stream, &StreamGate::hold, this)); }
  /// Opens the gate and waits until the host function has returned (it reads this object).
  ~StreamGate() {
    open();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!finished_.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  void open() { open_.store(true); }
  /// True once the stream has passed the gate (opened, or timed out).
  bool passed() const { return finished_.load(); }

 private:
  static void CUDART_CB hold(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!gate->open_.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    gate->finished_.store(true);
  }

  std::atomic<bool> open_{false}, finished_{false};
};

}  // namespace vt::test
