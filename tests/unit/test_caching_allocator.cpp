// Caching device allocator logic against a fake backend: addresses come from a counter (never dereferenced), the
// backend can be capped to simulate OOM, and events complete only when the test says so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "memory/caching_allocator.h"
#include "memory/host_block_cache.h"

namespace vt::test {
namespace {

using memory::CachingAllocator;
using memory::CachingAllocatorConfig;
using memory::Event;
using memory::Stream;

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

struct FakeBackend : memory::DeviceMemoryBackend {
  uintptr_t next_address = 0x10000000;
  size_t capacity = size_t(1) << 40;  // raw_alloc fails beyond this many live bytes
  size_t live = 0;
  std::vector<size_t> allocs;  // sizes asked of raw_alloc, including failed ones
  std::vector<uintptr_t> frees;
  std::vector<std::pair<uintptr_t, size_t>> live_segments;
  Event next_event = 1;
  std::vector<std::pair<Event, Stream>> recorded;
  std::set<Event> done, released;

  void* raw_alloc(size_t n) override {
    allocs.push_back(n);
    if (live + n > capacity) return nullptr;
    uintptr_t a = next_address;
    next_address += n + 4096;  // gap: a merge across segments would show up as a wrong size
    live += n;
    live_segments.emplace_back(a, n);
    return reinterpret_cast<void*>(a);
  }
  void raw_free(void* p) override {
    auto a = reinterpret_cast<uintptr_t>(p);
    frees.push_back(a);
    for (auto it = live_segments.begin(); it != live_segments.end(); ++it)
      if (it->first == a) {
        live -= it->second;
        live_segments.erase(it);
        return;
      }
    ADD_FAILURE() << "raw_free of unknown address " << p;
  }
  Event record_event(Stream s) override {
    recorded.emplace_back(next_event, s);
    return next_event++;
  }
  bool event_done(Event e) override { return done.count(e) > 0; }
  void wait_event(Event e) override { done.insert(e); }
  void release_event(Event e) override { released.insert(e); }
};

uintptr_t addr(void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(CachingAllocator, RoundsTo512AndPicksSegmentSizes) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(197 * 7), 1536u);
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB + 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB), 10 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(11 * MiB + 512), 12 * MiB);

  FakeBackend be;
  CachingAllocator a(be);
  void* p = a.allocate(7);
  auto s = a.stats();
  EXPECT_EQ(s.allocated_bytes, 512u);
  EXPECT_EQ(s.requested_bytes, 7u);
  EXPECT_EQ(s.reserved_bytes, 2 * MiB);
  EXPECT_EQ(be.allocs, (std::vector<size_t>{2 * MiB}));
  EXPECT_EQ(a.allocate(0), nullptr);
  a.free(p);
  a.free(nullptr);
  EXPECT_THROW(a.free(reinterpret_cast<void*>(0x1234)), Error);
}

TEST(CachingAllocator, SmallAndLargePoolsUseSeparateSegments) {
  FakeBackend be;
  CachingAllocator a(be);
  void* small1 = a.allocate(MiB);         // small pool: half of a 2 MiB segment
  void* small2 = a.allocate(100 * KiB);   // same small segment
  void* large = a.allocate(MiB + 1);      // large pool: a new 20 MiB segment
  void* huge = a.allocate(21 * MiB - 3);  // over the 20 MiB segment's remainder: own segment of 22 MiB
  EXPECT_EQ(be.allocs, (std::vector<size_t>{2 * MiB, 20 * MiB, 22 * MiB}));
  EXPECT_EQ(addr(small2), addr(small1) + MiB);
  EXPECT_EQ(addr(large), be.live_segments[1].first);
  EXPECT_EQ(addr(huge), be.live_segments[2].first);
  // A large request never takes the free remainder of the small segment, even if it would fit.
  a.free(small1);
  a.free(small2);
  void* large2 = a.allocate(MiB + 512);
  EXPECT_EQ(addr(large2), addr(large) + MiB + 512);
  EXPECT_EQ(be.allocs.size(), 3u);
  for (void* p : {large, huge, large2}) a.free(p);
}

TEST(CachingAllocator, ReuseAfterFreeIsACacheHit) {
  FakeBackend be;
  CachingAllocator a(be);
  void* p = a.allocate(3000);
  a.free(p);
  void* q = a.allocate(2900);  // same rounded size (3072)
  EXPECT_EQ(q, p);
  auto s = a.stats();
  EXPECT_EQ(s.raw_allocations, 1u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(be.allocs.size(), 1u);
  a.free(q);
}

TEST(CachingAllocator, SplitThenMergeBackToOneSegment) {
  FakeBackend be;
  CachingAllocator a(be);
  std::vector<void*> ps;
  for (int i = 0; i < 7; ++i) ps.push_back(a.allocate(197 * KiB));
  EXPECT_EQ(be.allocs.size(), 1u);  // 7 * 197 KiB < 2 MiB: all in one segment, contiguous
  for (int i = 1; i < 7; ++i) EXPECT_EQ(addr(ps[i]), addr(ps[i - 1]) + 197 * KiB);
  // Free in a scrambled order; merging must rebuild one free 2 MiB block, so a 1 MiB request and a
  // second 1 MiB request fit in the same segment again.
  for (int i : {3, 0, 6, 1, 5, 2, 4}) a.free(ps[i]);
  void* x = a.allocate(MiB);
  void* y = a.allocate(MiB);
  EXPECT_EQ(x, ps[0]);
  EXPECT_EQ(addr(y), addr(x) + MiB);
  EXPECT_EQ(be.allocs.size(), 1u);
  a.free(x);
  a.free(y);
  a.empty_cache();  // only a fully merged segment can be released
  EXPECT_EQ(be.frees.size(), 1u);
  EXPECT_EQ(a.stats().reserved_bytes, 0u);

  // Large pool: the remainder is kept only when > 1 MiB.
  void* l = a.allocate(19 * MiB);  // 20 MiB segment, remainder exactly 1 MiB: not split
  EXPECT_EQ(a.stats().allocated_bytes, 20 * MiB);
  a.free(l);
  void* m = a.allocate(18 * MiB);  // remainder 2 MiB: split
  EXPECT_EQ(a.stats().allocated_bytes, 18 * MiB);
  void* n = a.allocate(2 * MiB);
  EXPECT_EQ(addr(n), addr(m) + 18 * MiB);
  EXPECT_EQ(be.allocs.size(), 2u);
  a.free(m);
  a.free(n);
}

TEST(CachingAllocator, BestFitPicksTheSmallestFreeBlock) {
  FakeBackend be;
  CachingAllocator a(be);
  // Free holes of 300, 100 and 200 KiB separated by live blocks.
  void* h300 = a.allocate(300 * KiB);
  void* g1 = a.allocate(KiB);
  void* h100 = a.allocate(100 * KiB);
  void* g2 = a.allocate(KiB);
  void* h200 = a.allocate(200 * KiB);
  void* g3 = a.allocate(KiB);
  a.free(h300);
  a.free(h100);
  a.free(h200);
  EXPECT_EQ(a.allocate(150 * KiB), h200);
  EXPECT_EQ(a.allocate(90 * KiB), h100);
  EXPECT_EQ(a.allocate(250 * KiB), h300);
  EXPECT_EQ(be.allocs.size(), 1u);
  (void)g1, (void)g2, (void)g3;
}

TEST(CachingAllocator, MaxSplitSizeKeepsBigBlocksWhole) {
  FakeBackend be;
  CachingAllocatorConfig config;
  config.max_split_size = 8 * MiB;
  CachingAllocator a(be, config);
  void* big = a.allocate(40 * MiB);
  a.free(big);
  // A request under max_split_size does not carve the 40 MiB block: new 20 MiB segment.
  void* mid = a.allocate(3 * MiB);
  EXPECT_NE(addr(mid), addr(big));
  EXPECT_EQ(be.allocs, (std::vector<size_t>{40 * MiB, 20 * MiB}));
  // A request over max_split_size takes the block whole (waste < 20 MiB), no split.
  void* big2 = a.allocate(30 * MiB);
  EXPECT_EQ(big2, big);
  EXPECT_EQ(a.stats().allocated_bytes, 40 * MiB + 3 * MiB);
  a.free(big2);
  a.free(mid);  // merges back into one free 20 MiB block
  // 12 MiB >= max_split_size: best fit is the 20 MiB block, taken whole (waste < 20 MiB, no split) ...
  void* big3 = a.allocate(12 * MiB);
  EXPECT_EQ(big3, mid);
  EXPECT_EQ(a.stats().allocated_bytes, 20 * MiB);
  // ... but the 40 MiB block would waste 28 MiB: a new 12 MiB segment instead.
  void* big4 = a.allocate(12 * MiB);
  EXPECT_NE(big4, big);
  EXPECT_EQ(be.allocs, (std::vector<size_t>{40 * MiB, 20 * MiB, 12 * MiB}));
  a.free(big3);
  a.free(big4);

  // Default (unlimited): the same 40 MiB block is split for a 3 MiB request.
  FakeBackend be2;
  CachingAllocator b(be2);
  void* p = b.allocate(40 * MiB);
  b.free(p);
  EXPECT_EQ(b.allocate(3 * MiB), p);
  EXPECT_EQ(b.stats().allocated_bytes, 3 * MiB);
  EXPECT_EQ(be2.allocs.size(), 1u);
}

TEST(CachingAllocator, OomReleasesCacheRetriesThenReportsSizes) {
  FakeBackend be;
  be.capacity = 24 * MiB;
  CachingAllocator a(be);
  void* s = a.allocate(KiB);       // 2 MiB small segment
  void* l = a.allocate(5 * MiB);   // 20 MiB segment
  a.free(l);                       // cached
  void* h = a.allocate(12 * MiB);  // best fit: the cached 20 MiB block
  EXPECT_EQ(h, l);
  a.free(h);
  // 22 MiB needs a new segment: 2 + 20 + 22 > 24 fails, the cached 20 MiB goes back, retry succeeds.
  void* big = a.allocate(22 * MiB);
  ASSERT_NE(big, nullptr);
  auto st = a.stats();
  EXPECT_EQ(st.alloc_retries, 1u);
  EXPECT_EQ(st.reserved_bytes, 24 * MiB);
  EXPECT_EQ(be.frees.size(), 1u);
  EXPECT_EQ(be.allocs, (std::vector<size_t>{2 * MiB, 20 * MiB, 22 * MiB, 22 * MiB}));
  // Nothing cached is left to release: the error names the request and the allocator state.
  try {
    a.allocate(7 * MiB + 3);
    FAIL() << "expected out of memory";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[cuda_alloc] out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(7 * MiB + 3) + " bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("allocated 22.00 MiB (" + std::to_string(22 * MiB + KiB)), std::string::npos) << msg;
    EXPECT_NE(msg.find("reserved 24.00 MiB"), std::string::npos) << msg;
  }
  EXPECT_EQ(a.stats().ooms, 1u);
  a.free(big);
  a.free(s);
}

TEST(CachingAllocator, BlocksStayOnTheirStream) {
  FakeBackend be;
  CachingAllocator a(be);
  const Stream A = 0xA, B = 0xB;
  void* p = a.allocate(4 * KiB, A);
  a.free(p);
  void* q = a.allocate(4 * KiB, B);
  EXPECT_NE(q, p);
  EXPECT_EQ(be.allocs.size(), 2u);  // stream B got its own segment
  void* r = a.allocate(4 * KiB, A);
  EXPECT_EQ(r, p);
  EXPECT_EQ(a.stats().cache_hits, 1u);
  a.free(q);
  a.free(r);
}

TEST(CachingAllocator, RecordStreamDefersReuseUntilEventsComplete) {
  FakeBackend be;
  CachingAllocator a(be);
  const Stream A = 1, B = 2, C = 3;
  void* p = a.allocate(64 * KiB, A);
  a.record_stream(p, B);
  a.record_stream(p, C);
  a.record_stream(p, B);  // duplicate: one event only
  a.record_stream(p, A);  // own stream: nothing to wait for
  a.free(p);
  ASSERT_EQ(be.recorded.size(), 2u);
  EXPECT_EQ(be.recorded[0].second, B);
  EXPECT_EQ(be.recorded[1].second, C);
  EXPECT_EQ(a.stats().pending_event_blocks, 1u);
  EXPECT_EQ(a.stats().allocated_bytes, 0u);

  void* q = a.allocate(64 * KiB, A);  // neither event done: p is not reused
  EXPECT_NE(q, p);
  be.done.insert(be.recorded[0].first);
  void* r = a.allocate(64 * KiB, A);  // C still pending
  EXPECT_NE(r, p);
  be.done.insert(be.recorded[1].first);
  void* t = a.allocate(64 * KiB, A);
  EXPECT_EQ(t, p);
  EXPECT_EQ(be.released.size(), 2u);
  EXPECT_EQ(a.stats().pending_event_blocks, 0u);
  // The reused block starts with no stream uses: freeing it again records nothing.
  a.free(t);
  EXPECT_EQ(be.recorded.size(), 2u);
  a.free(q);
  a.free(r);

  // empty_cache waits for pending events, then the merged segment can go back.
  void* u = a.allocate(KiB, A);
  a.record_stream(u, B);
  a.free(u);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes, 0u);
  EXPECT_EQ(be.live, 0u);
}

TEST(CachingAllocator, StatsTrackPeaksAndEmptyCacheReturnsSegments) {
  FakeBackend be;
  CachingAllocator a(be);
  void* p = a.allocate(197 * KiB);
  void* q = a.allocate(3 * MiB);
  auto s = a.stats();
  EXPECT_EQ(s.allocated_bytes, 197 * KiB + 3 * MiB);
  EXPECT_EQ(s.reserved_bytes, 22 * MiB);
  EXPECT_EQ(s.segments, 2u);
  a.free(q);
  void* r = a.allocate(KiB);
  s = a.stats();
  EXPECT_EQ(s.allocated_bytes, 198 * KiB);
  EXPECT_EQ(s.peak_allocated_bytes, 197 * KiB + 3 * MiB);
  EXPECT_EQ(s.peak_reserved_bytes, 22 * MiB);
  a.empty_cache();  // the 20 MiB segment is unused, the small one is not
  s = a.stats();
  EXPECT_EQ(s.reserved_bytes, 2 * MiB);
  EXPECT_EQ(s.peak_reserved_bytes, 22 * MiB);
  EXPECT_EQ(s.raw_frees, 1u);
  EXPECT_EQ(be.live, 2 * MiB);
  a.reset_peak_stats();
  EXPECT_EQ(a.stats().peak_allocated_bytes, 198 * KiB);
  a.free(p);
  a.free(r);
  a.empty_cache();
  EXPECT_EQ(be.live, 0u);
  EXPECT_EQ(a.stats().segments, 0u);
}

TEST(CachingAllocator, DestructorReturnsCachedSegments) {
  FakeBackend be;
  {
    CachingAllocator a(be);
    a.free(a.allocate(5 * MiB));
    a.free(a.allocate(KiB));
    EXPECT_EQ(be.live, 22 * MiB);
  }
  EXPECT_EQ(be.live, 0u);
}

TEST(CachingAllocator, DirectModeGoesStraightToTheBackend) {
  ::setenv("VT_CUDA_ALLOCATOR", "direct", 1);
  auto config = CachingAllocatorConfig::from_env();
  ::setenv("VT_CUDA_ALLOCATOR", "bogus", 1);
  EXPECT_THROW(CachingAllocatorConfig::from_env(), Error);
  ::unsetenv("VT_CUDA_ALLOCATOR");
  EXPECT_FALSE(CachingAllocatorConfig::from_env().direct);
  ::setenv("VT_CUDA_MAX_SPLIT_SIZE_MB", "64", 1);
  EXPECT_EQ(CachingAllocatorConfig::from_env().max_split_size, 64 * MiB);
  ::setenv("VT_CUDA_MAX_SPLIT_SIZE_MB", "x", 1);
  EXPECT_THROW(CachingAllocatorConfig::from_env(), Error);
  ::unsetenv("VT_CUDA_MAX_SPLIT_SIZE_MB");

  ASSERT_TRUE(config.direct);
  FakeBackend be;
  CachingAllocator a(be, config);
  void* p = a.allocate(7);
  a.free(p);
  void* q = a.allocate(7);
  a.record_stream(q, 5);
  a.free(q);
  EXPECT_EQ(be.allocs, (std::vector<size_t>{7, 7}));  // exact sizes, no rounding, no cache
  EXPECT_EQ(be.frees.size(), 2u);
  EXPECT_TRUE(be.recorded.empty());
  auto s = a.stats();
  EXPECT_EQ(s.raw_allocations, 2u);
  EXPECT_EQ(s.cache_hits, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.peak_allocated_bytes, 7u);
  be.capacity = 0;
  EXPECT_THROW(a.allocate(1), Error);
}

// ---- the pinned host cache's logic (memory::HostBlockCache) over the same fake backend ----

using memory::HostBlockCache;

TEST(HostBlockCache, RoundsToPowersOfTwoAndReusesOnlyTheSameSize) {
  EXPECT_EQ(HostBlockCache::round_size(1), 4 * KiB);
  EXPECT_EQ(HostBlockCache::round_size(4 * KiB), 4 * KiB);
  EXPECT_EQ(HostBlockCache::round_size(4 * KiB + 1), 8 * KiB);
  EXPECT_EQ(HostBlockCache::round_size(3 * MiB + 17), 4 * MiB);
  FakeBackend be;
  HostBlockCache c(be);
  EXPECT_EQ(c.allocate(0), nullptr);
  void* p = c.allocate(3 * MiB + 17);
  void* q = c.allocate(5 * KiB);
  EXPECT_EQ(be.allocs, (std::vector<size_t>{4 * MiB, 8 * KiB}));
  c.free(p);
  void* r = c.allocate(3 * MiB);  // same rounded size: cache hit
  EXPECT_EQ(r, p);
  void* t = c.allocate(9 * KiB);  // 16 KiB: the cached 8 KiB block does not fit, a new one
  EXPECT_NE(t, q);
  auto s = c.stats();
  EXPECT_EQ(s.allocations, 4u);
  EXPECT_EQ(s.raw_allocations, 3u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.allocated_bytes, 4 * MiB + 8 * KiB + 16 * KiB);
  EXPECT_EQ(s.reserved_bytes, s.allocated_bytes);
  c.free(q);
  c.free(r);
  c.free(t);
  EXPECT_THROW(c.free(r), Error);  // double free
  int on_stack = 0;
  EXPECT_THROW(c.free(&on_stack), Error);
  EXPECT_EQ(c.stats().allocated_bytes, 0u);
  EXPECT_EQ(c.stats().peak_allocated_bytes, 4 * MiB + 24 * KiB);
  c.reset_peak_stats();
  EXPECT_EQ(c.stats().peak_allocated_bytes, 0u);
  c.empty_cache();
  EXPECT_EQ(c.stats().reserved_bytes, 0u);
  EXPECT_EQ(be.live, 0u);
}

TEST(HostBlockCache, RecordStreamDefersReuseUntilTheCopyCompletes) {
  FakeBackend be;
  HostBlockCache c(be);
  const Stream copy_stream = 7;
  void* p = c.allocate(64 * KiB);
  c.record_stream(p, copy_stream);  // an async H2D copy reads p on copy_stream
  c.free(p);
  ASSERT_EQ(be.recorded.size(), 1u);
  EXPECT_EQ(be.recorded[0].second, copy_stream);
  EXPECT_EQ(c.stats().pending_event_blocks, 1u);
  void* q = c.allocate(64 * KiB);  // copy not done: p must not be handed out
  EXPECT_NE(q, p);
  be.done.insert(be.recorded[0].first);
  void* r = c.allocate(64 * KiB);
  EXPECT_EQ(r, p);
  EXPECT_EQ(be.released.size(), 1u);
  EXPECT_EQ(c.stats().pending_event_blocks, 0u);
  c.free(r);  // no stream uses any more: cached at once
  EXPECT_EQ(be.recorded.size(), 1u);
  c.free(q);
  void* u = c.allocate(KiB);
  c.record_stream(u, copy_stream);
  c.free(u);
  c.empty_cache();  // waits for the pending event, then releases everything
  EXPECT_EQ(be.live, 0u);
  EXPECT_EQ(c.stats().pending_event_blocks, 0u);
}

TEST(HostBlockCache, OutOfMemoryReleasesCachedBlocksThenRetries) {
  FakeBackend be;
  be.capacity = 16 * KiB;
  HostBlockCache c(be);
  c.free(c.allocate(8 * KiB));
  c.free(c.allocate(4 * KiB));       // 12 KiB cached
  void* big = c.allocate(16 * KiB);  // fails at first; fits once the cached blocks are released
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(be.frees.size(), 2u);
  EXPECT_EQ(c.stats().reserved_bytes, 16 * KiB);
  try {
    c.allocate(KiB);
    FAIL() << "expected out of memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of page-locked host memory"), std::string::npos) << e.what();
  }
  c.free(big);
}

// A graph captured on stream 7 replays into its blocks later: other streams must never be handed them, and a block
// of another stream freed during the capture stays reserved for the graph until end_capture's caller frees it.
TEST(CachingAllocator, CaptureKeepsTheGraphsBlocksPrivate) {
  FakeBackend be;
  CachingAllocator a(be);
  const Stream graph_stream = 7;
  void* before = a.allocate(3000);  // stream 0, used by the captured work and freed during the capture
  a.begin_capture(graph_stream);
  void* temp = a.allocate(3000, graph_stream);
  a.free(temp);
  a.free(before);  // deferred
  void* again = a.allocate(3000, graph_stream);
  EXPECT_EQ(again, temp) << "inside the capture its own freed blocks are reused (stream order)";
  EXPECT_NE(again, before);
  const std::vector<void*> deferred = a.end_capture();
  ASSERT_EQ(deferred.size(), 1u);
  EXPECT_EQ(deferred[0], before);
  a.free(again);
  void* other = a.allocate(3000);  // stream 0 after the capture: neither the graph's block nor the deferred one
  EXPECT_NE(other, temp);
  EXPECT_NE(other, before);
  for (void* p : deferred) a.free(p);  // the graph is gone
  void* reused = a.allocate(3000);
  EXPECT_EQ(reused, before);
  a.free(other);
  a.free(reused);
  EXPECT_EQ(a.stats().allocated_bytes, 0u);
  a.begin_capture(1);
  EXPECT_THROW(a.begin_capture(2), Error) << "one capture at a time";
  EXPECT_TRUE(a.end_capture().empty());
}

}  // namespace
}  // namespace vt::test
