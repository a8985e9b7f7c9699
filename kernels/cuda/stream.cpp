#include "kernels/cuda/stream.h"

#include "kernels/cuda/check.h"

namespace vt::kernels::cuda {
namespace {
thread_local cudaStream_t t_current_stream = nullptr;
thread_local cudaStream_t t_allocation_stream = nullptr;
}  // namespace

cudaStream_t current_stream() { return t_current_stream; }

StreamGuard::StreamGuard(cudaStream_t stream) : previous_(t_current_stream) { t_current_stream = stream; }
StreamGuard::~StreamGuard() { t_current_stream = previous_; }

cudaStream_t allocation_stream() { return t_allocation_stream; }
void set_allocation_stream(cudaStream_t stream) { t_allocation_stream = stream; }

void fail_if_capturing(cudaStream_t stream, const std::string& what) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  VT_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  VT_CHECK(status == cudaStreamCaptureStatusNone, "[cuda_graph] ", what,
           " cannot be captured in a CUDA graph: run this step eagerly (without train.cuda_graph / --cuda-graph)");
}

}  // namespace vt::kernels::cuda
