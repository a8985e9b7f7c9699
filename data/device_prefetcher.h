// Moves a Loader's batches to the GPU ahead of the trainer: a background thread takes each CPU batch, copies it
// into pinned staging buffers (kernels/cuda/pinned_memory.h) and queues an asynchronous copy to the device on
// its own non-blocking stream, up to `depth` batches ahead. next() hands over the oldest batch after making the
// calling thread's current stream wait for its copy (on the device, not the host). For a CPU device it simply
// forwards the loader's batches. Built without CUDA, a CUDA device is a clear error.
#pragma once
#include <cstdint>
#include <memory>

#include "core/device.h"
#include "data/loader.h"

namespace vt::data {

class DevicePrefetcher {
 public:
  /// `loader` must outlive the prefetcher; depth >= 1 batches are copied ahead.
  DevicePrefetcher(Loader& loader, Device device, int depth = 2);
  ~DevicePrefetcher();
  DevicePrefetcher(const DevicePrefetcher&) = delete;
  DevicePrefetcher& operator=(const DevicePrefetcher&) = delete;

  /// Drops the batches in flight and starts the loader's `epoch`.
  void start_epoch(int64_t epoch);
  /// The next batch on the device, usable by work queued afterwards on the current stream; false at the end of
  /// the epoch. Rethrows the loader's (or the copy's) error.
  bool next(Batch& out);
  Device device() const { return device_; }

 private:
  struct Impl;
  Loader& loader_;
  Device device_;
  std::unique_ptr<Impl> impl_;  // CUDA only
};

}  // namespace vt::data
