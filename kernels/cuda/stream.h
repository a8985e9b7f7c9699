// The stream device work is queued on. Kernels and GEMMs take it explicitly; op front-ends ask current_stream().
// For now every thread uses the legacy default stream (nullptr), which orders work with the caching allocator's
// frees; StreamGuard lets a scope (a data-loader copy, a test, a CUDA graph capture) queue on another stream.
#pragma once
#include "kernels/device_handles.h"

#include <string>

namespace vt::kernels::cuda {

/// The calling thread's current stream (the legacy default stream unless a StreamGuard is active).
KernelStream current_stream();

/// RAII: makes `stream` the calling thread's current stream for the scope.
class StreamGuard {
 public:
  explicit StreamGuard(KernelStream stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  KernelStream previous_;
};

/// The stream new device tensors of this thread are allocated for: the capturing stream while this thread captures a
/// CUDA graph (its blocks stay the graph's own, see caching_allocator.h), else the legacy default stream.
KernelStream allocation_stream();
/// Sets allocation_stream() of the calling thread (CudaGraph::capture).
void set_allocation_stream(KernelStream stream);

/// Throws naming `what` when `stream` is capturing a CUDA graph: for work that a replay could not repeat (host
/// copies, synchronizations, host-chosen random offsets).
void fail_if_capturing(KernelStream stream, const std::string& what);

}  // namespace vt::kernels::cuda
