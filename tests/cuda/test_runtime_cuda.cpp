// CUDA runtime pieces: per-device allocator stats, the event wrapper, the pinned host cache, and stream safety of both
// caches on a real device (a block used by queued work on another stream is not handed out again until that work has
// run; a StreamGate keeps the work queued while the test allocates).
#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "device_test_util.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/event.h"
#include "kernels/cuda/pinned_memory.h"
#include "stream_gate.h"

namespace vt::test {
namespace {

using kernels::cuda::CudaEvent;
using kernels::cuda::PinnedBuffer;
using kernels::cuda::to_stream;

constexpr size_t MiB = size_t(1) << 20;

struct Streams {
  cudaStream_t a = nullptr, b = nullptr;
  Streams() {
    VT_CUDA_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    VT_CUDA_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  }
  ~Streams() {
    cudaStreamSynchronize(a);
    cudaStreamSynchronize(b);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
  }
};

TEST(RuntimeCuda, MemoryStatsTrackTensorsAndPeaksReset) {
  VT_REQUIRE_DEVICE();
  const auto before = kernels::cuda::memory_stats(0);
  {
    Tensor a = Tensor::empty({3 << 20}, DType::f32, kGpu);  // 12 MiB
    const auto during = kernels::cuda::memory_stats(0);
    EXPECT_GE(during.allocated_bytes - before.allocated_bytes, 12 * MiB);
    EXPECT_GE(during.reserved_bytes, during.allocated_bytes);
    EXPECT_GE(during.peak_allocated_bytes, during.allocated_bytes);
  }
  const auto after = kernels::cuda::memory_stats(0);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_GE(after.peak_allocated_bytes, before.allocated_bytes + 12 * MiB);
  kernels::cuda::reset_peak_memory_stats(0);
  const auto reset = kernels::cuda::memory_stats(0);
  EXPECT_EQ(reset.peak_allocated_bytes, reset.allocated_bytes);
  EXPECT_EQ(reset.peak_reserved_bytes, reset.reserved_bytes);
  kernels::cuda::empty_cache(0);
  EXPECT_LE(kernels::cuda::memory_stats(0).reserved_bytes, reset.reserved_bytes);
}

TEST(RuntimeCuda, EventsRecordWaitAndTime) {
  VT_REQUIRE_DEVICE();
  Streams st;
  void* d = nullptr;
  VT_CUDA_CHECK(cudaMalloc(&d, 64 * MiB));
  CudaEvent start, stop;
  start.record(st.a);
  VT_CUDA_CHECK(cudaMemsetAsync(d, 1, 64 * MiB, st.a));
  stop.record(st.a);
  EXPECT_GE(stop.elapsed_ms_since(start), 0.0f);
  EXPECT_TRUE(stop.query());

  CudaEvent gated(false);
  {
    StreamGate gate(st.a);
    gated.record(st.a);
    EXPECT_FALSE(gated.query());
    gated.block(st.b);  // b waits on the device for a's gate
    VT_CUDA_CHECK(cudaMemsetAsync(d, 2, MiB, st.b));
    EXPECT_EQ(cudaStreamQuery(st.b), cudaErrorNotReady);
    cudaGetLastError();
    gate.open();
    gated.synchronize();
  }
  EXPECT_TRUE(gated.query());
  VT_CUDA_CHECK(cudaStreamSynchronize(st.b));
  CudaEvent moved(std::move(gated));
  EXPECT_EQ(gated.get(), nullptr);
  EXPECT_TRUE(moved.query());
  VT_CUDA_CHECK(cudaFree(d));
}

TEST(RuntimeCuda, DeviceBlockUsedOnAnotherStreamIsNotReusedBeforeThatWorkRuns) {
  VT_REQUIRE_DEVICE();
  memory::CachingAllocator& alloc = kernels::cuda::cuda_allocator(0);
  if (alloc.config().direct) GTEST_SKIP() << "VT_CUDA_ALLOCATOR=direct: no cache";
  alloc.empty_cache();  // no stale blocks tagged with a reused stream handle
  Streams st;
  const size_t n = 3 * MiB + 5;
  void* spare = alloc.allocate(n, to_stream(st.a));
  void* p = alloc.allocate(n, to_stream(st.a));
  VT_CUDA_CHECK(cudaMemsetAsync(p, 0x5A, n, st.a));
  VT_CUDA_CHECK(cudaStreamSynchronize(st.a));
  alloc.free(spare);  // cached: the allocation below needs no cudaMalloc while b is held
  PinnedBuffer host(n);
  std::memset(host.data(), 0, n);
  void* q = nullptr;
  {
    StreamGate gate(st.b);
    // Queued behind the gate: it reads p only once the gate opens.
    VT_CUDA_CHECK(cudaMemcpyAsync(host.data(), p, n, cudaMemcpyDeviceToHost, st.b));
    alloc.record_stream(p, to_stream(st.b));
    alloc.free(p);
    EXPECT_GE(alloc.stats().pending_event_blocks, 1u);
    q = alloc.allocate(n, to_stream(st.a));
    EXPECT_NE(q, p) << "handed out while stream b still has to read it";
    VT_CUDA_CHECK(cudaMemsetAsync(q, 0x00, n, st.a));
    VT_CUDA_CHECK(cudaStreamSynchronize(st.a));
    gate.open();
    VT_CUDA_CHECK(cudaStreamSynchronize(st.b));
  }
  const auto* bytes = static_cast<const unsigned char*>(host.data());
  EXPECT_EQ(bytes[0], 0x5A);
  EXPECT_EQ(bytes[n - 1], 0x5A);
  EXPECT_EQ(std::vector<unsigned char>(bytes, bytes + n), std::vector<unsigned char>(n, 0x5A));
  void* r = alloc.allocate(n, to_stream(st.a));  // b's copy is done: p is free again (best fit: same size)
  EXPECT_EQ(r, p);
  alloc.free(q);
  alloc.free(r);
  alloc.empty_cache();
}

TEST(RuntimeCuda, PinnedBuffersRoundTripAndAreCachedBySize) {
  VT_REQUIRE_DEVICE();
  auto& cache = kernels::cuda::pinned_host_cache();
  cache.empty_cache();  // earlier tests' device-to-host copies may have left blocks of this size class
  const size_t n = 5 * MiB + 3;
  void* d = nullptr;
  VT_CUDA_CHECK(cudaMalloc(&d, n));
  Streams st;
  void* first = nullptr;
  {
    PinnedBuffer a(n);
    first = a.data();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(a.size(), n);
    cudaPointerAttributes attr{};
    VT_CUDA_CHECK(cudaPointerGetAttributes(&attr, first));
    EXPECT_EQ(attr.type, cudaMemoryTypeHost) << "page-locked";
    auto* bytes = static_cast<unsigned char*>(a.data());
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(i * 7);
    VT_CUDA_CHECK(cudaMemcpyAsync(d, a.data(), n, cudaMemcpyHostToDevice, st.a));
    VT_CUDA_CHECK(cudaStreamSynchronize(st.a));
  }
  const auto hits = cache.stats().cache_hits;
  PinnedBuffer b(n - 1000);  // same power-of-two size: the cached block
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(cache.stats().cache_hits, hits + 1);
  VT_CUDA_CHECK(cudaMemcpy(b.data(), d, n - 1000, cudaMemcpyDeviceToHost));
  const auto* bytes = static_cast<const unsigned char*>(b.data());
  for (size_t i = 0; i < n - 1000; i += 4099) ASSERT_EQ(bytes[i], static_cast<unsigned char>(i * 7)) << i;
  VT_CUDA_CHECK(cudaFree(d));
}

TEST(RuntimeCuda, PinnedBufferReadByAQueuedCopyIsNotReusedEarly) {
  VT_REQUIRE_DEVICE();
  auto& cache = kernels::cuda::pinned_host_cache();
  const size_t n = 3 * MiB + 17;
  void* d = nullptr;
  VT_CUDA_CHECK(cudaMalloc(&d, n));
  VT_CUDA_CHECK(cudaMemset(d, 0, n));
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  Streams st;
  { PinnedBuffer w1(n), w2(n); }  // two cached blocks: no cudaHostAlloc below while stream b is held
  {
    StreamGate gate(st.b);
    PinnedBuffer staging(n);
    std::memset(staging.data(), 0x11, n);
    // Queued behind the gate: it reads the staging buffer only once the gate opens.
    VT_CUDA_CHECK(cudaMemcpyAsync(d, staging.data(), n, cudaMemcpyHostToDevice, st.b));
    staging.record_stream(st.b);
    void* old = staging.data();
    staging = PinnedBuffer();  // released while the copy is still queued
    EXPECT_GE(cache.stats().pending_event_blocks, 1u);
    PinnedBuffer next(n);
    EXPECT_NE(next.data(), old) << "handed out while the copy still has to read it";
    std::memset(next.data(), 0x22, n);
    gate.open();
    VT_CUDA_CHECK(cudaStreamSynchronize(st.b));
  }
  std::vector<unsigned char> back(n);
  VT_CUDA_CHECK(cudaMemcpy(back.data(), d, n, cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<unsigned char>(n, 0x11));
  { PinnedBuffer after(n); }  // processes the completed event
  EXPECT_EQ(cache.stats().pending_event_blocks, 0u);
  VT_CUDA_CHECK(cudaFree(d));
}

}  // namespace
}  // namespace vt::test
