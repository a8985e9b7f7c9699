// RAII: makes `device` current for the scope and restores the previous device on exit.
#pragma once
#include "kernels/cuda/check.h"

namespace vt::kernels::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    VT_CUDA_CHECK(cudaGetDevice(&previous_));
    switched_ = previous_ != device;
    if (switched_) VT_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace vt::kernels::cuda
