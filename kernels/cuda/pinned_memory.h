// Page-locked host memory for asynchronous host<->device copies (the data loader's staging buffers), from a
// process-wide cache of cudaHostAlloc'd blocks (memory/host_block_cache.h: power-of-two sizes, reuse deferred until the
// streams that used a block are done with it).
#pragma once
#include "kernels/device_handles.h"

#include <cstddef>

#include "memory/host_block_cache.h"

namespace vt::kernels::cuda {

/// The backend of the pinned cache: cudaHostAlloc (portable: usable from every device) and cudaFreeHost; events are
/// created on the current device, so record_stream must name a stream of the current device.
class CudaPinnedBackend final : public memory::DeviceMemoryBackend {
 public:
  /// nullptr when cudaHostAlloc reports cudaErrorMemoryAllocation; other errors throw.
  void* raw_alloc(size_t nbytes) override;
  void raw_free(void* ptr) override;
  memory::Event record_event(memory::Stream stream) override;
  bool event_done(memory::Event event) override;
  void wait_event(memory::Event event) override;
  void release_event(memory::Event event) override;
};

/// The process-wide pinned host cache (created on first use, never destroyed: see cuda_allocator()).
memory::HostBlockCache& pinned_host_cache();

/// RAII: a pinned block of at least `nbytes` from pinned_host_cache(), given back on destruction.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t nbytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return ptr_; }
  size_t size() const { return size_; }
  /// An asynchronous copy on `stream` uses this buffer: its reuse after release waits for that copy.
  void record_stream(KernelStream stream);

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace vt::kernels::cuda
