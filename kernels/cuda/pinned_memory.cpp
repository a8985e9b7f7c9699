#include "kernels/cuda/pinned_memory.h"

#include <utility>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_memory.h"

namespace vt::kernels::cuda {
namespace {
cudaEvent_t to_cuda_event(memory::Event event) { return reinterpret_cast<cudaEvent_t>(event); }
}  // namespace

void* CudaPinnedBackend::raw_alloc(size_t nbytes) {
  void* ptr = nullptr;
  cudaError_t status = cudaHostAlloc(&ptr, nbytes, cudaHostAllocPortable);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  VT_CHECK(status == cudaSuccess, "[pinned_alloc] cudaHostAlloc(", nbytes, ") failed: ", cudaGetErrorString(status));
  return ptr;
}

void CudaPinnedBackend::raw_free(void* ptr) { VT_CUDA_CHECK(cudaFreeHost(ptr)); }

memory::Event CudaPinnedBackend::record_event(memory::Stream stream) {
  cudaEvent_t event = nullptr;
  VT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  VT_CUDA_CHECK(cudaEventRecord(event, to_cuda_stream(stream)));
  return reinterpret_cast<memory::Event>(event);
}

bool CudaPinnedBackend::event_done(memory::Event event) {
  cudaError_t status = cudaEventQuery(to_cuda_event(event));
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  VT_CHECK(status == cudaSuccess, "[pinned_alloc] cudaEventQuery failed: ", cudaGetErrorString(status));
  return true;
}

void CudaPinnedBackend::wait_event(memory::Event event) { VT_CUDA_CHECK(cudaEventSynchronize(to_cuda_event(event))); }

void CudaPinnedBackend::release_event(memory::Event event) { VT_CUDA_CHECK(cudaEventDestroy(to_cuda_event(event))); }

memory::HostBlockCache& pinned_host_cache() {
  static auto* backend = new CudaPinnedBackend();  // leaked on purpose, as cuda_allocator()
  static auto* cache = new memory::HostBlockCache(*backend);
  return *cache;
}

PinnedBuffer::PinnedBuffer(size_t nbytes) : ptr_(pinned_host_cache().allocate(nbytes)), size_(nbytes) {}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) pinned_host_cache().free(ptr_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) pinned_host_cache().free(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void PinnedBuffer::record_stream(cudaStream_t stream) { pinned_host_cache().record_stream(ptr_, to_stream(stream)); }

}  // namespace vt::kernels::cuda
