// GELU (erf form, as nn.GELU()) forward and backward on contiguous f32 buffers; grid-stride loops.
#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/cuda/elementwise.h"

namespace vt::kernels::cuda {

// ---- kernels ----
namespace {

__global__ void gelu_fwd_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}

__global__ void gelu_bwd_kernel(float* dx, const float* dy, const float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = x[i];
    float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752f));
    float pdf = 0.39894228040143268f * __expf(-0.5f * v * v);
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

int grid_for(int64_t n, int block) { return static_cast<int>(std::min<int64_t>((n + block - 1) / block, 132 * 32)); }

}  // namespace

// ---- launchers ----
void gelu_forward(float* y, const float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  gelu_fwd_kernel<<<grid_for(n, 256), 256, 0, stream>>>(y, x, n);
  VT_CUDA_CHECK(cudaGetLastError());
}

void gelu_backward(float* dx, const float* dy, const float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  gelu_bwd_kernel<<<grid_for(n, 256), 256, 0, stream>>>(dx, dy, x, n);
  VT_CUDA_CHECK(cudaGetLastError());
}

bool device_available() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) cudaGetLastError();  // clear it, so the next launch check does not report it
  return status == cudaSuccess && count > 0;
}

}  // namespace vt::kernels::cuda
