#include "kernels/cuda/graph.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/stream.h"

namespace vt::kernels::cuda {

CudaGraph::CudaGraph(int device) : device_(device) {
  DeviceGuard guard(device_);
  // Non-blocking: the legacy default stream (other threads' copies) must not join the capture implicitly.
  VT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  VT_CUDA_CHECK(cudaEventCreateWithFlags(&queued_, cudaEventDisableTiming));
  VT_CUDA_CHECK(cudaEventCreateWithFlags(&finished_, cudaEventDisableTiming));
}

CudaGraph::~CudaGraph() {
  DeviceGuard guard(device_);
  cudaStreamSynchronize(stream_);
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
  for (void* p : held_blocks_) cuda_allocator(device_).free(p);
  cudaEventDestroy(queued_);
  cudaEventDestroy(finished_);
  cudaStreamDestroy(stream_);
}

void CudaGraph::release_capture_state() {
  set_allocation_stream(nullptr);
  std::vector<void*> held = cuda_allocator(device_).end_capture();
  held_blocks_.insert(held_blocks_.end(), held.begin(), held.end());
}

void CudaGraph::capture(const std::function<void()>& body) {
  VT_CHECK(!captured(), "[cuda_graph] already captured");
  DeviceGuard guard(device_);
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  cuda_allocator(device_).begin_capture(to_stream(stream_));
  set_allocation_stream(stream_);
  cudaGraph_t graph = nullptr;
  try {
    StreamGuard on_stream(stream_);
    // Thread-local: a synchronizing call from this thread invalidates the capture (and is reported) instead of
    // silently reading stale data; the allocator's cudaMalloc switches to relaxed mode for itself.
    VT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      body();
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      throw;
    }
    VT_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  } catch (...) {
    release_capture_state();
    throw;
  }
  release_capture_state();
  graph_ = graph;
  VT_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &num_nodes_));
  VT_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  VT_CUDA_CHECK(cudaGraphUpload(exec_, stream_));
}

void CudaGraph::replay() {
  VT_CHECK(captured(), "[cuda_graph] replay before capture");
  DeviceGuard guard(device_);
  VT_CUDA_CHECK(cudaEventRecord(queued_, cudaStreamLegacy));
  VT_CUDA_CHECK(cudaStreamWaitEvent(stream_, queued_, 0));
  VT_CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
  VT_CUDA_CHECK(cudaEventRecord(finished_, stream_));
  VT_CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, finished_, 0));
}

}  // namespace vt::kernels::cuda
