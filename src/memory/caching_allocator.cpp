// Caching device allocator: block bookkeeping (pools ordered by stream/size/address, split and merge within a
// segment, stream events deferring reuse). See caching_allocator.h for the policy.
#include "memory/caching_allocator.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace vt::memory {

// A block is a piece of a segment; the blocks of one segment form a doubly linked list in address order.
// States: allocated; free and in its pool (event_count == 0); freed but waiting on events (event_count > 0).
struct CachingAllocator::Block {
  Stream stream = 0;
  size_t size = 0;
  size_t requested = 0;
  Pool* pool = nullptr;
  char* ptr = nullptr;
  Block* prev = nullptr;
  Block* next = nullptr;
  bool allocated = false;
  int event_count = 0;
  std::vector<Stream> stream_uses;
};

bool CachingAllocator::BlockLess::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

namespace {

std::string format_bytes(size_t n) {
  char buf[64];
  if (n >= (size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(size_t(1) << 30));
  else if (n >= (size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(n) / double(size_t(1) << 20));
  else if (n >= 1024) std::snprintf(buf, sizeof buf, "%.2f KiB", double(n) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%zu B", n);
  return std::string(buf) + " (" + std::to_string(n) + " bytes)";
}

}  // namespace

CachingAllocatorConfig CachingAllocatorConfig::from_env() {
  CachingAllocatorConfig config;
  if (const char* mode = std::getenv("VT_CUDA_ALLOCATOR"); mode && *mode) {
    std::string_view m(mode);
    VT_CHECK(m == "caching" || m == "direct", "[cuda_alloc] VT_CUDA_ALLOCATOR=", m, " is not one of: caching, direct");
    config.direct = m == "direct";
  }
  if (const char* mb = std::getenv("VT_CUDA_MAX_SPLIT_SIZE_MB"); mb && *mb) {
    std::string_view s(mb);
    size_t value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    VT_CHECK(ec == std::errc() && end == s.data() + s.size() && value > 0 && value < (size_t(1) << 40),
             "[cuda_alloc] VT_CUDA_MAX_SPLIT_SIZE_MB=", s, " is not a positive number of MiB");
    config.max_split_size = value << 20;
  }
  return config;
}

CachingAllocator::CachingAllocator(DeviceMemoryBackend& backend, CachingAllocatorConfig config)
    : backend_(backend), config_(config) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    synchronize_events();
    release_cached_blocks();
  } catch (...) {
    // The backend may already be shut down at process exit; the memory goes with the process.
  }
  for (Pool* pool : {&small_pool_, &large_pool_})
    for (Block* b : *pool) delete b;
  for (auto& [ptr, b] : active_) delete b;
  for (auto& [event, b] : pending_events_)
    if (--b->event_count == 0) delete b;
}

size_t CachingAllocator::round_size(size_t nbytes) {
  if (nbytes < kMinBlockSize) return kMinBlockSize;
  return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

void CachingAllocator::add_allocated(size_t size, size_t requested) {
  stats_.allocated_bytes += size;
  stats_.requested_bytes += requested;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
}

void CachingAllocator::add_reserved(size_t size) {
  stats_.reserved_bytes += size;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  stats_.segments += 1;
  stats_.raw_allocations += 1;
}

void* CachingAllocator::allocate_direct(size_t nbytes) {
  void* ptr = backend_.raw_alloc(nbytes);
  if (!ptr) {
    stats_.ooms += 1;
    VT_FAIL("[cuda_alloc] out of memory (direct mode): tried to allocate ", format_bytes(nbytes), "; allocated ",
            format_bytes(stats_.allocated_bytes), ", reserved ", format_bytes(stats_.reserved_bytes));
  }
  direct_sizes_[ptr] = nbytes;
  add_reserved(nbytes);
  add_allocated(nbytes, nbytes);
  stats_.allocations += 1;
  return ptr;
}

CachingAllocator::Block* CachingAllocator::find_free_block(Pool& pool, size_t size, Stream stream) {
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  // Ordered by size, so every later candidate breaks these rules too.
  if (size < config_.max_split_size && block->size >= config_.max_split_size) return nullptr;
  if (size >= config_.max_split_size && block->size >= size + kLargeBuffer) return nullptr;
  pool.erase(it);
  return block;
}

bool CachingAllocator::should_split(const Block* block, size_t size) const {
  size_t remaining = block->size - size;
  if (block->pool == &small_pool_) return remaining >= kMinBlockSize;
  return size < config_.max_split_size && remaining > kSmallSize;
}

void* CachingAllocator::allocate(size_t nbytes, Stream stream) {
  if (nbytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (config_.direct) return allocate_direct(nbytes);

  process_events();
  const size_t size = round_size(nbytes);
  Pool& pool = size <= kSmallSize ? small_pool_ : large_pool_;
  Block* block = find_free_block(pool, size, stream);
  bool hit = block != nullptr;
  if (!block) {
    const size_t alloc_size = segment_size(size);
    void* ptr = backend_.raw_alloc(alloc_size);
    if (!ptr && !capturing_) {  // (freeing segments would synchronize: not while a graph is captured)
      // Blocks waiting on events may fit once those complete; otherwise give every unused segment back.
      stats_.alloc_retries += 1;
      synchronize_events();
      block = find_free_block(pool, size, stream);
      hit = block != nullptr;
      if (!block) {
        release_cached_blocks();
        ptr = backend_.raw_alloc(alloc_size);
      }
    }
    if (!block && !ptr) {
      stats_.ooms += 1;
      VT_FAIL("[cuda_alloc] out of memory: tried to allocate ", format_bytes(nbytes), " (a new segment of ",
              format_bytes(alloc_size), ") on stream ", stream, "; allocated ", format_bytes(stats_.allocated_bytes),
              ", reserved ", format_bytes(stats_.reserved_bytes), " in ", stats_.segments, " segments, peak allocated ",
              format_bytes(stats_.peak_allocated_bytes), " (cached unused segments were released before this retry)");
    }
    if (!block) {
      block = new Block;
      block->stream = stream;
      block->size = alloc_size;
      block->pool = &pool;
      block->ptr = static_cast<char*>(ptr);
      add_reserved(alloc_size);
    }
  }

  if (should_split(block, size)) {
    Block* rest = new Block;
    rest->stream = stream;
    rest->size = block->size - size;
    rest->pool = &pool;
    rest->ptr = block->ptr + size;
    rest->prev = block;
    rest->next = block->next;
    if (rest->next) rest->next->prev = rest;
    block->next = rest;
    block->size = size;
    pool.insert(rest);
  }
  block->allocated = true;
  block->requested = nbytes;
  active_.emplace(block->ptr, block);
  add_allocated(block->size, nbytes);
  stats_.allocations += 1;
  if (hit) stats_.cache_hits += 1;
  return block->ptr;
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (config_.direct) {
    auto it = direct_sizes_.find(ptr);
    VT_CHECK(it != direct_sizes_.end(), "[cuda_alloc] free of pointer ", ptr, " that this allocator did not hand out");
    backend_.raw_free(ptr);
    stats_.allocated_bytes -= it->second;
    stats_.requested_bytes -= it->second;
    stats_.reserved_bytes -= it->second;
    stats_.segments -= 1;
    stats_.raw_frees += 1;
    direct_sizes_.erase(it);
    return;
  }
  auto it = active_.find(ptr);
  VT_CHECK(it != active_.end(), "[cuda_alloc] free of pointer ", ptr, " that this allocator did not hand out");
  Block* block = it->second;
  if (capturing_ && block->stream != capture_stream_) {
    deferred_frees_.push_back(ptr);
    return;
  }
  active_.erase(it);
  block->allocated = false;
  stats_.allocated_bytes -= block->size;
  stats_.requested_bytes -= block->requested;
  block->requested = 0;
  if (block->stream_uses.empty()) {
    free_block(block);
    return;
  }
  for (Stream s : block->stream_uses) {
    pending_events_.emplace_back(backend_.record_event(s), block);
    block->event_count += 1;
  }
  block->stream_uses.clear();
}

void CachingAllocator::record_stream(void* ptr, Stream stream) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (config_.direct) return;  // direct frees go to the backend, whose free synchronizes
  auto it = active_.find(ptr);
  VT_CHECK(it != active_.end(), "[cuda_alloc] record_stream on pointer ", ptr,
           " that is not an allocation of this allocator");
  Block* block = it->second;
  if (stream == block->stream) return;
  if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) == block->stream_uses.end())
    block->stream_uses.push_back(stream);
}

void CachingAllocator::begin_capture(Stream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  VT_CHECK(!config_.direct, "[cuda_alloc] CUDA graph capture needs the caching allocator (VT_CUDA_ALLOCATOR=direct)");
  VT_CHECK(!capturing_, "[cuda_alloc] a CUDA graph capture is already in progress");
  capturing_ = true;
  capture_stream_ = stream;
}

std::vector<void*> CachingAllocator::end_capture() {
  std::lock_guard<std::mutex> lock(mutex_);
  capturing_ = false;
  capture_stream_ = 0;
  return std::exchange(deferred_frees_, {});
}

void CachingAllocator::free_block(Block* block) {
  Pool& pool = *block->pool;
  auto mergeable = [](const Block* b) { return b && !b->allocated && b->event_count == 0; };
  if (Block* prev = block->prev; mergeable(prev)) {
    pool.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (prev->next) prev->next->prev = prev;
    delete block;
    block = prev;
  }
  if (Block* next = block->next; mergeable(next)) {
    pool.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (block->next) block->next->prev = block;
    delete next;
  }
  pool.insert(block);
}

void CachingAllocator::process_events() {
  auto keep = pending_events_.begin();
  for (auto it = pending_events_.begin(); it != pending_events_.end(); ++it) {
    auto [event, block] = *it;
    if (!backend_.event_done(event)) {
      *keep++ = *it;
      continue;
    }
    backend_.release_event(event);
    if (--block->event_count == 0) free_block(block);
  }
  pending_events_.erase(keep, pending_events_.end());
}

void CachingAllocator::synchronize_events() {
  for (auto [event, block] : pending_events_) {
    backend_.wait_event(event);
    backend_.release_event(event);
    if (--block->event_count == 0) free_block(block);
  }
  pending_events_.clear();
}

void CachingAllocator::release_segment(Block* block) {
  backend_.raw_free(block->ptr);
  stats_.reserved_bytes -= block->size;
  stats_.segments -= 1;
  stats_.raw_frees += 1;
  delete block;
}

void CachingAllocator::release_cached_blocks() {
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (block->prev || block->next) {  // part of a segment still in use
        ++it;
        continue;
      }
      it = pool->erase(it);
      release_segment(block);
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (config_.direct) return;
  synchronize_events();
  release_cached_blocks();
}

CachingAllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CachingAllocatorStats s = stats_;
  s.pending_event_blocks = 0;
  std::vector<const Block*> seen;
  for (auto& [event, block] : pending_events_)
    if (std::find(seen.begin(), seen.end(), block) == seen.end()) seen.push_back(block);
  s.pending_event_blocks = seen.size();
  return s;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

}  // namespace vt::memory
