// A cache of host blocks by size, for page-locked (pinned) memory: cudaHostAlloc/cudaFreeHost cost milliseconds and
// synchronize, while a data loader asks for the same batch sizes every step. Sizes are rounded up to a power of two (at
// least 4 KiB) and a freed block is reused only for the same rounded size. A block that was the source or target of
// asynchronous copies on some streams (record_stream) is reused only after the work queued on those streams at free
// time has completed, as in the device allocator. Pure C++ over the allocator's DeviceMemoryBackend interface
// (raw_alloc/raw_free return host memory here), so it is tested without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "memory/caching_allocator.h"

namespace vt::memory {

struct HostBlockCacheStats {
  size_t allocated_bytes = 0;  // blocks handed out (rounded sizes)
  size_t reserved_bytes = 0;   // blocks held from the backend, handed out or cached
  size_t peak_allocated_bytes = 0;
  size_t peak_reserved_bytes = 0;
  uint64_t allocations = 0;
  uint64_t raw_allocations = 0;
  uint64_t cache_hits = 0;
  size_t pending_event_blocks = 0;  // freed blocks waiting on stream events
};

class HostBlockCache {
 public:
  static constexpr size_t kMinBlockSize = 4096;

  explicit HostBlockCache(DeviceMemoryBackend& backend);
  /// Returns cached blocks to the backend (blocks still handed out are left to the process).
  ~HostBlockCache();
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  /// A block of at least nbytes (nullptr for 0). When the backend fails, cached blocks are released and the allocation
  /// retried once; then vt::Error names the request.
  void* allocate(size_t nbytes);
  /// nullptr is ignored; a pointer this cache did not hand out throws.
  void free(void* ptr);
  /// Work queued on `stream` (a copy from or to the block) must finish before the block is reused after free.
  void record_stream(void* ptr, Stream stream);
  /// Returns every unused cached block to the backend (waits for pending events first).
  void empty_cache();

  HostBlockCacheStats stats() const;
  void reset_peak_stats();
  /// The size a request is rounded up to (a power of two, at least kMinBlockSize).
  static size_t round_size(size_t nbytes);

 private:
  struct Block {
    size_t size = 0;
    bool allocated = false;
    int event_count = 0;
    std::vector<Stream> stream_uses;
  };

  void process_events();
  void synchronize_events();
  void release_cached_blocks();
  void make_free(void* ptr, Block& block);

  DeviceMemoryBackend& backend_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;  // every block held from the backend
  std::multimap<size_t, void*> free_;        // rounded size -> cached block
  std::vector<std::pair<Event, void*>> pending_events_;
  HostBlockCacheStats stats_;
};

}  // namespace vt::memory
