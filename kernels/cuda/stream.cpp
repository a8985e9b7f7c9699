#include "kernels/cuda/stream.h"

namespace vt::kernels::cuda {
namespace {
thread_local cudaStream_t t_current_stream = nullptr;
}

cudaStream_t current_stream() { return t_current_stream; }

StreamGuard::StreamGuard(cudaStream_t stream) : previous_(t_current_stream) { t_current_stream = stream; }
StreamGuard::~StreamGuard() { t_current_stream = previous_; }

}  // namespace vt::kernels::cuda
