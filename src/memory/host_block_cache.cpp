// Host block cache: exact-size reuse of power-of-two blocks, stream events deferring reuse.
#include "memory/host_block_cache.h"

#include <algorithm>
#include <bit>

#include "core/error.h"

namespace vt::memory {

HostBlockCache::HostBlockCache(DeviceMemoryBackend& backend) : backend_(backend) {}

HostBlockCache::~HostBlockCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    synchronize_events();
    release_cached_blocks();
  } catch (...) {
    // The backend may already be shut down at process exit; the memory goes with the process.
  }
}

size_t HostBlockCache::round_size(size_t nbytes) { return std::max(kMinBlockSize, std::bit_ceil(nbytes)); }

void* HostBlockCache::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  VT_CHECK(nbytes <= (size_t(1) << 62), "[pinned_alloc] request of ", nbytes, " bytes is too large");
  const size_t size = round_size(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  process_events();
  void* ptr = nullptr;
  if (auto it = free_.find(size); it != free_.end()) {
    ptr = it->second;
    free_.erase(it);
    stats_.cache_hits += 1;
  } else {
    ptr = backend_.raw_alloc(size);
    if (!ptr) {
      synchronize_events();
      if (auto again = free_.find(size); again != free_.end()) {
        ptr = again->second;
        free_.erase(again);
        stats_.cache_hits += 1;
      } else {
        release_cached_blocks();
        ptr = backend_.raw_alloc(size);
      }
    }
    VT_CHECK(ptr != nullptr, "[pinned_alloc] out of page-locked host memory: tried to allocate ", size,
             " bytes; allocated ", stats_.allocated_bytes, ", reserved ", stats_.reserved_bytes);
    if (!blocks_.count(ptr)) {
      blocks_[ptr].size = size;
      stats_.reserved_bytes += size;
      stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
      stats_.raw_allocations += 1;
    }
  }
  Block& block = blocks_.at(ptr);
  block.allocated = true;
  stats_.allocated_bytes += block.size;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  stats_.allocations += 1;
  return ptr;
}

void HostBlockCache::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(ptr);
  VT_CHECK(it != blocks_.end() && it->second.allocated, "[pinned_alloc] free of pointer ", ptr,
           " that this cache did not hand out");
  Block& block = it->second;
  block.allocated = false;
  stats_.allocated_bytes -= block.size;
  if (block.stream_uses.empty()) {
    free_.emplace(block.size, ptr);
    return;
  }
  for (Stream s : block.stream_uses) {
    pending_events_.emplace_back(backend_.record_event(s), ptr);
    block.event_count += 1;
  }
  block.stream_uses.clear();
}

void HostBlockCache::record_stream(void* ptr, Stream stream) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(ptr);
  VT_CHECK(it != blocks_.end() && it->second.allocated, "[pinned_alloc] record_stream on pointer ", ptr,
           " that is not an allocation of this cache");
  auto& uses = it->second.stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

void HostBlockCache::make_free(void* ptr, Block& block) {
  if (--block.event_count == 0) free_.emplace(block.size, ptr);
}

void HostBlockCache::process_events() {
  auto keep = pending_events_.begin();
  for (auto it = pending_events_.begin(); it != pending_events_.end(); ++it) {
    if (!backend_.event_done(it->first)) {
      *keep++ = *it;
      continue;
    }
    backend_.release_event(it->first);
    make_free(it->second, blocks_.at(it->second));
  }
  pending_events_.erase(keep, pending_events_.end());
}

void HostBlockCache::synchronize_events() {
  for (auto [event, ptr] : pending_events_) {
    backend_.wait_event(event);
    backend_.release_event(event);
    make_free(ptr, blocks_.at(ptr));
  }
  pending_events_.clear();
}

void HostBlockCache::release_cached_blocks() {
  for (auto [size, ptr] : free_) {
    backend_.raw_free(ptr);
    blocks_.erase(ptr);
    stats_.reserved_bytes -= size;
  }
  free_.clear();
}

void HostBlockCache::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  synchronize_events();
  release_cached_blocks();
}

HostBlockCacheStats HostBlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  HostBlockCacheStats s = stats_;
  s.pending_event_blocks = 0;
  for (const auto& [ptr, block] : blocks_) s.pending_event_blocks += block.event_count > 0 ? 1 : 0;
  return s;
}

void HostBlockCache::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

}  // namespace vt::memory
