#include "kernels/cuda/event.h"

#include <utility>

#include "kernels/cuda/check.h"

namespace vt::kernels::cuda {

CudaEvent::CudaEvent(bool timing) {
  VT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() {
  if (event_) cudaEventDestroy(event_);
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void CudaEvent::record(cudaStream_t stream) { VT_CUDA_CHECK(cudaEventRecord(event_, stream)); }

void CudaEvent::block(cudaStream_t stream) const { VT_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }

void CudaEvent::synchronize() const { VT_CUDA_CHECK(cudaEventSynchronize(event_)); }

bool CudaEvent::query() const {
  cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();  // not an error: clear it so the next check does not report it
    return false;
  }
  VT_CUDA_CHECK(status);
  return true;
}

float CudaEvent::elapsed_ms_since(const CudaEvent& start) const {
  synchronize();
  float ms = 0.0f;
  VT_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

}  // namespace vt::kernels::cuda
