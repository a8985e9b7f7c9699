// CUDA backend of the caching allocator (cudaMalloc/cudaFree, cudaEventRecord/cudaEventQuery) and the
// per-device allocator that device tensors get their memory from.
#pragma once
#include "kernels/device_handles.h"
#include "memory/caching_allocator.h"

namespace vt::kernels::cuda {

class CudaMemoryBackend final : public memory::DeviceMemoryBackend {
 public:
  explicit CudaMemoryBackend(int device) : device_(device) {}
  /// nullptr when cudaMalloc reports cudaErrorMemoryAllocation; other errors throw.
  void* raw_alloc(size_t nbytes) override;
  void raw_free(void* ptr) override;
  memory::Event record_event(memory::Stream stream) override;
  bool event_done(memory::Event event) override;
  void wait_event(memory::Event event) override;
  void release_event(memory::Event event) override;
  int device() const { return device_; }

 private:
  int device_;
};

inline memory::Stream to_stream(KernelStream stream) { return reinterpret_cast<memory::Stream>(stream); }
inline KernelStream to_cuda_stream(memory::Stream stream) { return reinterpret_cast<KernelStream>(stream); }

/// The caching allocator of `device` (created on first use, configured from VT_CUDA_ALLOCATOR /
/// VT_CUDA_MAX_SPLIT_SIZE_MB). It lives until the process ends and is never destroyed, so no cudaFree runs
/// after the CUDA runtime has been torn down at exit.
memory::CachingAllocator& cuda_allocator(int device);

/// The counters of `device`'s caching allocator: allocated/reserved bytes, their peaks, cache hits, segments.
memory::CachingAllocatorStats memory_stats(int device);
/// Restarts the peaks from the bytes allocated/reserved now (call before the region a benchmark measures).
void reset_peak_memory_stats(int device);
/// Returns `device`'s cached unused segments to the driver (waits for pending stream events first).
void empty_cache(int device);

}  // namespace vt::kernels::cuda
