// Host-visible launchers of the CUDA element-wise kernels (contiguous f32 buffers on the device).
#pragma once
#include <cstdint>

#include <cuda_runtime.h>

namespace vt::kernels::cuda {

/// y = x·Φ(x) (exact erf GELU), n elements.
void gelu_forward(float* y, const float* x, int64_t n, cudaStream_t stream);
/// dx = dy·(Φ(x) + x·φ(x)).
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n, cudaStream_t stream);

/// True when a CUDA device can be used (false without a driver or GPU).
bool device_available();

}  // namespace vt::kernels::cuda
