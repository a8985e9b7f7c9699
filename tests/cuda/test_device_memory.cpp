// The caching allocator over real device memory (cuda_allocator(0)): byte-exact memset/memcpy round trips at
// sizes of both pools, reuse and stats, stream-tagged frees, and a clean error on an impossible request. Skips
// with the reason when no CUDA device can be used.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "core/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/elementwise.h"

namespace vt::test {
namespace {

using kernels::cuda::cuda_allocator;
using memory::CachingAllocator;

constexpr size_t MiB = size_t(1) << 20;

#define VT_REQUIRE_DEVICE()                                                        \
  do {                                                                             \
    if (!kernels::cuda::device_available())                                        \
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount() failed or found none"; \
  } while (0)

size_t charged(const CachingAllocator& a, size_t n) { return a.config().direct ? n : CachingAllocator::round_size(n); }

TEST(DeviceMemory, RoundTripsAtSeveralSizesAndTracksStats) {
  VT_REQUIRE_DEVICE();
  CachingAllocator& alloc = cuda_allocator(0);
  const auto before = alloc.stats();
  const std::vector<size_t> sizes = {1, 7, 512, 197 * 1024 + 3, MiB, MiB + 1, 3 * MiB + 5, 13 * MiB + 7};
  std::vector<void*> ptrs;
  size_t expected = 0;
  for (size_t n : sizes) {
    void* p = alloc.allocate(n);
    ASSERT_NE(p, nullptr);
    ptrs.push_back(p);
    expected += charged(alloc, n);
    std::vector<uint8_t> host(n), back(n, 0);
    for (size_t i = 0; i < n; ++i) host[i] = uint8_t((i * 31 + n) & 0xff);
    VT_CUDA_CHECK(cudaMemcpy(p, host.data(), n, cudaMemcpyHostToDevice));
    VT_CUDA_CHECK(cudaMemcpy(back.data(), p, n, cudaMemcpyDeviceToHost));
    ASSERT_EQ(back, host) << "size " << n;
    VT_CUDA_CHECK(cudaMemset(p, 0xAB, n));
    VT_CUDA_CHECK(cudaMemcpy(back.data(), p, n, cudaMemcpyDeviceToHost));
    ASSERT_EQ(back, std::vector<uint8_t>(n, 0xAB)) << "size " << n;
  }
  // Earlier buffers were not overwritten by later ones (no overlapping blocks).
  for (size_t k = 0; k < sizes.size(); ++k) {
    uint8_t first = 0;
    VT_CUDA_CHECK(cudaMemcpy(&first, ptrs[k], 1, cudaMemcpyDeviceToHost));
    EXPECT_EQ(first, 0xAB) << "size " << sizes[k];
  }
  auto during = alloc.stats();
  EXPECT_EQ(during.allocated_bytes - before.allocated_bytes, expected);
  EXPECT_GE(during.reserved_bytes, during.allocated_bytes);
  EXPECT_GE(during.peak_allocated_bytes, during.allocated_bytes);
  for (void* p : ptrs) alloc.free(p);
  EXPECT_EQ(alloc.stats().allocated_bytes, before.allocated_bytes);

  // Same sizes again: served from the cache without new cudaMalloc calls.
  const auto cached = alloc.stats();
  for (size_t k = 0; k < sizes.size(); ++k) ptrs[k] = alloc.allocate(sizes[k]);
  auto again = alloc.stats();
  if (!alloc.config().direct) {
    EXPECT_EQ(again.raw_allocations, cached.raw_allocations);
    EXPECT_EQ(again.cache_hits - cached.cache_hits, sizes.size());
  }
  for (void* p : ptrs) alloc.free(p);
  alloc.empty_cache();
  EXPECT_LE(alloc.stats().reserved_bytes, before.reserved_bytes);
}

TEST(DeviceMemory, RecordStreamAndFreeOnAnotherStream) {
  VT_REQUIRE_DEVICE();
  CachingAllocator& alloc = cuda_allocator(0);
  cudaStream_t s1 = nullptr, s2 = nullptr;
  VT_CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  VT_CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  const size_t n = 5 * MiB + 3;
  void* p = alloc.allocate(n, kernels::cuda::to_stream(s1));
  VT_CUDA_CHECK(cudaMemsetAsync(p, 0x5A, n, s1));
  VT_CUDA_CHECK(cudaStreamSynchronize(s1));
  std::vector<uint8_t> back(n);
  VT_CUDA_CHECK(cudaMemcpyAsync(back.data(), p, n, cudaMemcpyDeviceToHost, s2));  // s2 uses the block
  alloc.record_stream(p, kernels::cuda::to_stream(s2));
  alloc.free(p);  // reuse waits for s2's copy
  void* q = alloc.allocate(n, kernels::cuda::to_stream(s1));
  VT_CUDA_CHECK(cudaMemsetAsync(q, 0x00, n, s1));
  VT_CUDA_CHECK(cudaStreamSynchronize(s2));
  VT_CUDA_CHECK(cudaStreamSynchronize(s1));
  EXPECT_EQ(back, std::vector<uint8_t>(n, 0x5A));
  alloc.free(q);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().pending_event_blocks, 0u);
  VT_CUDA_CHECK(cudaStreamDestroy(s1));
  VT_CUDA_CHECK(cudaStreamDestroy(s2));
}

TEST(DeviceMemory, ImpossibleRequestThrowsAndAllocatorStaysUsable) {
  VT_REQUIRE_DEVICE();
  CachingAllocator& alloc = cuda_allocator(0);
  try {
    alloc.allocate(size_t(1) << 52);  // 4 PiB
    FAIL() << "expected out of memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  void* p = alloc.allocate(1000);
  VT_CUDA_CHECK(cudaMemset(p, 0, 1000));
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  alloc.free(p);
  EXPECT_THROW(cuda_allocator(-1), Error);
}

}  // namespace
}  // namespace vt::test
