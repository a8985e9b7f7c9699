#include "memory/cpu_allocator.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace vt::memory {

namespace {

// Size classes: 64-byte steps up to 4 KiB, then four steps per power of two (≤ 25% slack).
size_t size_class(size_t n) {
  if (n <= 4096) return (n + 63) / 64 * 64;
  size_t p = 4096;
  while (p * 2 < n) p *= 2;
  size_t step = p / 4;
  return (n + step - 1) / step * step;
}

constexpr size_t kMaxCachedBytes = size_t(2) << 30;

struct Cache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;
  CpuAllocatorStats stats;

  void release_all() {
    for (auto& [cap, blocks] : free_blocks)
      for (void* p : blocks) std::free(p);
    free_blocks.clear();
    stats.cached_bytes = 0;
  }
  ~Cache() { release_all(); }
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

void* cpu_allocate(size_t nbytes, size_t* capacity) {
  const size_t cap = size_class(nbytes == 0 ? 1 : nbytes);
  *capacity = cap;
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.allocations;
    c.stats.active_bytes += cap;
    if (c.stats.active_bytes > c.stats.peak_active_bytes) c.stats.peak_active_bytes = c.stats.active_bytes;
    auto it = c.free_blocks.find(cap);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.stats.cached_bytes -= cap;
      ++c.stats.cache_hits;
      return p;
    }
  }
  void* p = std::aligned_alloc(64, cap);
  if (!p) {
    cpu_empty_cache();
    p = std::aligned_alloc(64, cap);
    if (!p) throw std::bad_alloc();
  }
  return p;
}

void cpu_free(void* ptr, size_t capacity) {
  if (!ptr) return;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.active_bytes -= capacity;
  if (c.stats.cached_bytes + capacity > kMaxCachedBytes) {
    std::free(ptr);
    return;
  }
  c.free_blocks[capacity].push_back(ptr);
  c.stats.cached_bytes += capacity;
}

void cpu_empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.release_all();
}

CpuAllocatorStats cpu_allocator_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

}  // namespace vt::memory
