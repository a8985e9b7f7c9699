#include "kernels/cuda/device_limits.h"

#include <cuda_runtime.h>

#include "kernels/cuda/check.h"

namespace vt::kernels::cuda {

int max_dynamic_shared_memory() {
  int device = 0, bytes = 0;
  VT_CUDA_CHECK(cudaGetDevice(&device));
  VT_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return bytes;
}

}  // namespace vt::kernels::cuda
