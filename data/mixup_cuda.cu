#include "data/mixup_cuda.h"

#include "kernels/cuda/check.h"

namespace vt::data::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

// One thread per element of the first half of the batch; it writes both images of the pair. __fmul_rn /
// __fadd_rn keep nvcc from fusing into FMAs, so the rounding is the CPU's.
__global__ void blend_kernel(float* x, int64_t batch, int64_t per_image, float lam, float rest) {
  const int64_t n = batch / 2 * per_image;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx / per_image, k = idx % per_image;
    float* a = x + i * per_image + k;
    float* b = x + (batch - 1 - i) * per_image + k;
    const float va = *a, vb = *b;
    *a = __fadd_rn(__fmul_rn(va, lam), __fmul_rn(vb, rest));
    *b = __fadd_rn(__fmul_rn(vb, lam), __fmul_rn(va, rest));
  }
}

__global__ void swap_kernel(float* x, int64_t batch, int64_t channels, int64_t height, int64_t width, int y0, int bh,
                            int x0, int bw) {
  const int64_t box = static_cast<int64_t>(bh) * bw, n = batch / 2 * channels * box;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx / (channels * box), rem = idx % (channels * box);
    const int64_t c = rem / box, y = y0 + (rem % box) / bw, xx = x0 + (rem % box) % bw;
    const int64_t offset = (c * height + y) * width + xx, per_image = channels * height * width;
    float* a = x + i * per_image + offset;
    float* b = x + (batch - 1 - i) * per_image + offset;
    const float t = *a;
    *a = *b;
    *b = t;
  }
}

__global__ void targets_kernel(float* t, const int64_t* labels, int64_t batch, int64_t classes, float base,
                               float add_own, float add_other) {
  const int64_t n = batch * classes;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx / classes, k = idx % classes;
    float v = base;
    if (labels[i] == k) v = __fadd_rn(v, add_own);
    if (labels[batch - 1 - i] == k) v = __fadd_rn(v, add_other);
    t[idx] = v;
  }
}

}  // namespace

void mixup_blend(float* images, int64_t batch, int64_t per_image, float lam, float rest, cudaStream_t stream) {
  const int64_t n = batch / 2 * per_image;
  if (n == 0) return;
  blend_kernel<<<blocks_for(n), kThreads, 0, stream>>>(images, batch, per_image, lam, rest);
  VT_CUDA_CHECK(cudaGetLastError());
}

void cutmix_swap(float* images, int64_t batch, int64_t channels, int64_t height, int64_t width, int y0, int y1, int x0,
                 int x1, cudaStream_t stream) {
  const int64_t n = batch / 2 * channels * (y1 - y0) * static_cast<int64_t>(x1 - x0);
  if (n <= 0) return;
  swap_kernel<<<blocks_for(n), kThreads, 0, stream>>>(images, batch, channels, height, width, y0, y1 - y0, x0, x1 - x0);
  VT_CUDA_CHECK(cudaGetLastError());
}

void mix_targets(float* targets, const int64_t* labels, int64_t batch, int64_t classes, float base, float add_own,
                 float add_other, cudaStream_t stream) {
  const int64_t n = batch * classes;
  if (n == 0) return;
  targets_kernel<<<blocks_for(n), kThreads, 0, stream>>>(targets, labels, batch, classes, base, add_own, add_other);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::data::cuda
