// CPU allocator: 64-byte aligned blocks with a size-class cache. Training allocates and frees the same
// activation sizes every step; reusing blocks avoids the page faults and zeroing of fresh mmap'd memory
// (measured at ~15% of a CPU training step without the cache).
#pragma once
#include <cstddef>
#include <cstdint>

namespace vt::memory {

struct CpuAllocatorStats {
  uint64_t allocations = 0, cache_hits = 0;
  size_t cached_bytes = 0, active_bytes = 0, peak_active_bytes = 0;
};

/// Returns at least `nbytes`, 64-byte aligned; *capacity receives the block's real size (pass it back to free).
void* cpu_allocate(size_t nbytes, size_t* capacity);
void cpu_free(void* ptr, size_t capacity);
/// Releases every cached block to the system.
void cpu_empty_cache();
CpuAllocatorStats cpu_allocator_stats();

}  // namespace vt::memory
