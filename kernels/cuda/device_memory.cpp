// CUDA memory backend: raw allocations and stream events on one device, with the current device switched
// for the call and restored afterwards.
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/device_memory.h"

#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cuda/check.h"

namespace vt::kernels::cuda {
namespace {

cudaEvent_t to_cuda_event(memory::Event event) { return reinterpret_cast<cudaEvent_t>(event); }

// cudaMalloc and event queries are "unsafe" while this thread captures a CUDA graph in thread-local mode, yet the
// caching allocator needs them then (new segments for the graph's pool): relaxed mode for the call alone.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace

void* CudaMemoryBackend::raw_alloc(size_t nbytes) {
  DeviceGuard guard(device_);
  RelaxedCaptureMode relaxed;
  void* ptr = nullptr;
  cudaError_t status = cudaMalloc(&ptr, nbytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so the next check does not report it
    return nullptr;
  }
  VT_CHECK(status == cudaSuccess, "[cuda_alloc] cudaMalloc(", nbytes, ") on device ", device_,
           " failed: ", cudaGetErrorString(status));
  return ptr;
}

void CudaMemoryBackend::raw_free(void* ptr) {
  DeviceGuard guard(device_);
  VT_CUDA_CHECK(cudaFree(ptr));
}

memory::Event CudaMemoryBackend::record_event(memory::Stream stream) {
  DeviceGuard guard(device_);
  RelaxedCaptureMode relaxed;
  cudaEvent_t event = nullptr;
  VT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  VT_CUDA_CHECK(cudaEventRecord(event, to_cuda_stream(stream)));
  return reinterpret_cast<memory::Event>(event);
}

bool CudaMemoryBackend::event_done(memory::Event event) {
  RelaxedCaptureMode relaxed;
  cudaError_t status = cudaEventQuery(to_cuda_event(event));
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  VT_CHECK(status == cudaSuccess, "[cuda_alloc] cudaEventQuery failed: ", cudaGetErrorString(status));
  return true;
}

void CudaMemoryBackend::wait_event(memory::Event event) { VT_CUDA_CHECK(cudaEventSynchronize(to_cuda_event(event))); }

void CudaMemoryBackend::release_event(memory::Event event) { VT_CUDA_CHECK(cudaEventDestroy(to_cuda_event(event))); }

memory::CachingAllocator& cuda_allocator(int device) {
  struct Entry {
    std::unique_ptr<CudaMemoryBackend> backend;
    std::unique_ptr<memory::CachingAllocator> allocator;
  };
  static std::mutex mutex;
  static auto* entries = new std::vector<Entry>();  // leaked on purpose: see the header
  std::lock_guard<std::mutex> lock(mutex);
  if (entries->empty()) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) cudaGetLastError();
    VT_CHECK(status == cudaSuccess && count > 0, "[cuda_alloc] no CUDA device: ",
             status == cudaSuccess ? "cudaGetDeviceCount() found 0 devices" : cudaGetErrorString(status));
    entries->resize(size_t(count));
  }
  VT_CHECK(device >= 0 && size_t(device) < entries->size(), "[cuda_alloc] device ", device,
           " out of range: ", entries->size(), " CUDA devices");
  Entry& e = (*entries)[size_t(device)];
  if (!e.allocator) {
    e.backend = std::make_unique<CudaMemoryBackend>(device);
    e.allocator = std::make_unique<memory::CachingAllocator>(*e.backend, memory::CachingAllocatorConfig::from_env());
  }
  return *e.allocator;
}

memory::CachingAllocatorStats memory_stats(int device) { return cuda_allocator(device).stats(); }

void reset_peak_memory_stats(int device) { cuda_allocator(device).reset_peak_stats(); }

void empty_cache(int device) { cuda_allocator(device).empty_cache(); }

}  // namespace vt::kernels::cuda
