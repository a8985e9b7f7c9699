#include "kernels/cuda/device_guard.h"

#include "kernels/cuda/check.h"

namespace vt::kernels::cuda {

DeviceGuard::DeviceGuard(int device) {
  VT_CUDA_CHECK(cudaGetDevice(&previous_));
  switched_ = previous_ != device;
  if (switched_) VT_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  if (switched_) cudaSetDevice(previous_);
}

}  // namespace vt::kernels::cuda
