// The stream device work is queued on. Kernels and GEMMs take it explicitly; op front-ends ask current_stream().
// For now every thread uses the legacy default stream (nullptr), which orders work with the caching allocator's
// frees; StreamGuard lets a scope (a data-loader copy, a test) queue on another stream.
#pragma once
#include <cuda_runtime.h>

namespace vt::kernels::cuda {

/// The calling thread's current stream (the legacy default stream unless a StreamGuard is active).
cudaStream_t current_stream();

/// RAII: makes `stream` the calling thread's current stream for the scope.
class StreamGuard {
 public:
  explicit StreamGuard(cudaStream_t stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  cudaStream_t previous_;
};

}  // namespace vt::kernels::cuda
