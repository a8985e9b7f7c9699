// The one way to run a kernel on a device (op front-ends, optimizers): the CPU kernel for a CPU device; for a CUDA
// device the CUDA launcher, with that device made current (DeviceGuard) and the calling thread's current stream.
// The launchers are declared without CUDA headers, and a build without the CUDA backend links stand-ins that throw
// "[launcher] needs the CUDA backend" (kernels/no_cuda), so a caller never needs #ifdef VT_WITH_CUDA.
//
//   kernels::dispatch(dev, [&] { kernels::cpu::softmax_forward(...); },
//                          [&](kernels::Cuda c) { kernels::cuda::softmax_forward(..., c.stream); });
#pragma once
#include <utility>

#include "core/device.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/stream.h"
#include "kernels/device_handles.h"

namespace vt::kernels {

/// What a CUDA branch is handed: the stream its launchers queue on (the device is already current).
struct Cuda {
  KernelStream stream = nullptr;
};

/// Runs cuda(Cuda) on `device` (a CUDA device): made current for the call, with the thread's current stream.
template <typename CudaFn>
decltype(auto) on_cuda(Device device, CudaFn&& cuda) {
  kernels::cuda::DeviceGuard guard(device.index);
  return std::forward<CudaFn>(cuda)(Cuda{kernels::cuda::current_stream()});
}

/// cpu() for a CPU device, else on_cuda(device, cuda). Both branches return the same type.
template <typename CpuFn, typename CudaFn>
decltype(auto) dispatch(Device device, CpuFn&& cpu, CudaFn&& cuda) {
  if (device.is_cuda()) return on_cuda(device, std::forward<CudaFn>(cuda));
  return std::forward<CpuFn>(cpu)();
}

}  // namespace vt::kernels
