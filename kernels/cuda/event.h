// RAII cudaEvent_t: record on a stream, wait for it from the host or from another stream, time between two.
#pragma once
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

class CudaEvent {
 public:
  /// A new event on the current device; `timing` = false makes record/wait cheaper but elapsed_ms unusable.
  explicit CudaEvent(bool timing = true);
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  /// Captures the work queued on `stream` so far.
  void record(KernelStream stream);
  /// Makes `stream` wait (on the device, not the host) for the recorded work.
  void block(KernelStream stream) const;
  /// Blocks the host until the recorded work has completed.
  void synchronize() const;
  /// True when the recorded work has completed (or nothing was recorded); never blocks.
  bool query() const;
  /// Milliseconds between `start` and this event, both recorded with timing on; waits for this event first.
  float elapsed_ms_since(const CudaEvent& start) const;
  DeviceEvent get() const { return event_; }

 private:
  DeviceEvent event_ = nullptr;
};

}  // namespace vt::kernels::cuda
