// cuBLASLt's per-device state for the implementation files of kernels/cuda (blas.cpp, bias_grad.cu); front-ends
// reach GEMMs through blas.h only.
#pragma once
#include <cstddef>
#include <mutex>
#include <unordered_map>

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace vt::kernels::cuda {

/// Per-device cuBLASLt state, created on first use and never destroyed (no cuBLAS call runs after the CUDA
/// runtime has been torn down at exit): the handle, and one 32 MiB workspace per stream from the device's
/// caching allocator (a workspace shared by two streams would race).
class BlasContext {
 public:
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;
  static BlasContext& get(int device);
  cublasLtHandle_t handle() const { return handle_; }
  void* workspace(KernelStream stream);

 private:
  explicit BlasContext(int device);
  int device_;
  cublasLtHandle_t handle_ = nullptr;
  std::mutex mutex_;
  std::unordered_map<KernelStream, void*> workspaces_;
};

}  // namespace vt::kernels::cuda
