// The CUDA runtime pieces that code outside #ifdef VT_WITH_CUDA reaches (the op front-ends' device guard and
// current stream, a CUDA graph's lifetime), for a build without the CUDA backend. There is no device to switch and
// no stream to queue on, so those do nothing; the launcher stubs that follow them refuse, naming the launcher.
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/graph.h"
#include "kernels/cuda/stream.h"
#include "kernels/no_cuda/no_cuda_backend.h"

namespace vt::kernels::cuda {

DeviceGuard::DeviceGuard(int) {}
DeviceGuard::~DeviceGuard() = default;

KernelStream current_stream() { return nullptr; }
StreamGuard::StreamGuard(KernelStream) : previous_(nullptr) {}
StreamGuard::~StreamGuard() = default;
KernelStream allocation_stream() { return nullptr; }
void set_allocation_stream(KernelStream) {}
void fail_if_capturing(KernelStream, const std::string&) {}

// engine::GraphStep holds one (never made without CUDA).
CudaGraph::CudaGraph(int) { no_cuda_backend("CudaGraph"); }
CudaGraph::~CudaGraph() = default;

}  // namespace vt::kernels::cuda
