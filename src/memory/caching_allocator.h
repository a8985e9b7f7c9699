// Caching device allocator (the scheme of PyTorch's CUDACachingAllocator). cudaMalloc/cudaFree synchronize and
// cost tens of microseconds, while a training step allocates and frees the same activation sizes over and over,
// so freed blocks are kept and reused. The logic is pure C++ over an abstract DeviceMemoryBackend, so it is
// tested on machines without a GPU (tests/unit/test_caching_allocator.cpp uses a fake backend).
//
// - Requests are rounded up to 512 B. Requests <= 1 MiB come from the small pool (carved from 2 MiB segments),
//   larger ones from the large pool (1-10 MiB from 20 MiB segments, larger ones rounded up to 2 MiB).
// - Best fit within the pool of the same stream; a block is split when the remainder is worth keeping (small pool:
//   >= 512 B, large pool: > 1 MiB) and adjacent free blocks of one segment are merged on free.
// - Blocks of max_split_size or more are never split; small requests do not take them, and large requests only
//   take one that wastes less than 20 MiB (keeps huge cached blocks from being fragmented by small tensors).
// - A block belongs to the stream it was allocated on. record_stream(ptr, s) marks another stream that uses it;
//   free then records an event on each such stream and the block is reused only after those events complete.
// - When the backend is out of memory, every cached unused segment is released and the allocation retried
//   once; then vt::Error names the request and the allocated/reserved bytes.
// - VT_CUDA_ALLOCATOR=direct sends every allocate/free straight to the backend (for compute-sanitizer).
// - CUDA graph capture (begin_capture/end_capture): the captured work allocates on the capture stream, so its blocks
//   form a pool no other stream's requests can take (the graph replays into them later). A block of another stream
//   freed during the capture may still be read or written by replays, so it is not freed then but handed to the
//   graph by end_capture(), which frees it when the graph is destroyed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace vt::memory {

/// Opaque handles of the backend (cudaStream_t / cudaEvent_t for CUDA). Stream 0 is the default stream.
using Stream = uintptr_t;
using Event = uintptr_t;

struct DeviceMemoryBackend {
  virtual ~DeviceMemoryBackend() = default;
  /// Raw device memory; nullptr when out of memory (other failures throw).
  virtual void* raw_alloc(size_t nbytes) = 0;
  virtual void raw_free(void* ptr) = 0;
  /// An event recorded on `stream` now (work queued so far on it).
  virtual Event record_event(Stream stream) = 0;
  virtual bool event_done(Event event) = 0;
  /// Blocks until the event completed.
  virtual void wait_event(Event event) = 0;
  virtual void release_event(Event event) = 0;
};

struct CachingAllocatorConfig {
  /// Blocks of at least this size are never split (default: no limit).
  size_t max_split_size = std::numeric_limits<size_t>::max();
  /// Every allocate/free goes straight to the backend (no cache).
  bool direct = false;
  /// VT_CUDA_ALLOCATOR=caching|direct (default caching), VT_CUDA_MAX_SPLIT_SIZE_MB=N (default unlimited).
  static CachingAllocatorConfig from_env();
};

struct CachingAllocatorStats {
  size_t allocated_bytes = 0;  // blocks handed out (rounded sizes)
  size_t requested_bytes = 0;  // what callers asked for
  size_t reserved_bytes = 0;   // segments held from the backend
  size_t peak_allocated_bytes = 0;
  size_t peak_reserved_bytes = 0;
  uint64_t allocations = 0;      // allocate() calls that returned memory
  uint64_t raw_allocations = 0;  // successful backend raw_alloc calls
  uint64_t raw_frees = 0;
  uint64_t cache_hits = 0;     // allocations served from a cached block
  uint64_t alloc_retries = 0;  // cache flushed after a backend OOM
  uint64_t ooms = 0;           // allocations that failed after the retry
  size_t segments = 0;
  size_t pending_event_blocks = 0;  // freed blocks waiting on other streams' events
};

class CachingAllocator {
 public:
  static constexpr size_t kMinBlockSize = 512;
  static constexpr size_t kSmallSize = size_t(1) << 20;     // largest request of the small pool
  static constexpr size_t kSmallBuffer = size_t(2) << 20;   // segment size of the small pool
  static constexpr size_t kLargeBuffer = size_t(20) << 20;  // segment size for 1-10 MiB requests
  static constexpr size_t kMinLargeAlloc = size_t(10) << 20;
  static constexpr size_t kRoundLarge = size_t(2) << 20;

  explicit CachingAllocator(DeviceMemoryBackend& backend, CachingAllocatorConfig config = {});
  /// Releases cached segments; blocks still in use are left to the backend's owner.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// nbytes == 0 returns nullptr. Throws vt::Error when the device is out of memory.
  void* allocate(size_t nbytes, Stream stream = 0);
  /// nullptr is ignored; a pointer this allocator did not hand out throws.
  void free(void* ptr);
  /// `stream` uses the block too: its reuse after free waits for the work queued on `stream` so far.
  void record_stream(void* ptr, Stream stream);
  /// Returns every unused cached segment to the backend (waits for pending stream events first).
  void empty_cache();

  /// A CUDA graph is being captured on `stream`: until end_capture(), frees of blocks of other streams are deferred.
  /// One capture at a time; not in direct mode.
  void begin_capture(Stream stream);
  /// Ends the capture and returns the blocks whose free was deferred; free() them once the graph is gone.
  std::vector<void*> end_capture();

  CachingAllocatorStats stats() const;
  void reset_peak_stats();
  const CachingAllocatorConfig& config() const { return config_; }

  /// Sizes the allocator uses (exposed for tests and memory planning).
  static size_t round_size(size_t nbytes);
  static size_t segment_size(size_t rounded);

 private:
  struct Block;
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BlockLess>;

  void* allocate_direct(size_t nbytes);
  Block* find_free_block(Pool& pool, size_t size, Stream stream);
  Block* new_segment(Pool& pool, size_t size, Stream stream, size_t* alloc_size);
  bool should_split(const Block* block, size_t size) const;
  void free_block(Block* block);
  void process_events();
  void synchronize_events();
  void release_cached_blocks();
  void release_segment(Block* block);
  void add_allocated(size_t size, size_t requested);
  void add_reserved(size_t size);

  DeviceMemoryBackend& backend_;
  CachingAllocatorConfig config_;
  mutable std::mutex mutex_;
  Pool small_pool_, large_pool_;
  std::unordered_map<void*, Block*> active_;
  std::vector<std::pair<Event, Block*>> pending_events_;
  std::unordered_map<void*, size_t> direct_sizes_;
  bool capturing_ = false;
  Stream capture_stream_ = 0;
  std::vector<void*> deferred_frees_;  // blocks of other streams freed during the capture
  CachingAllocatorStats stats_;
};

}  // namespace vt::memory
