#include "data/crop_resize_cuda.h"
#include "kernels/cuda/check.h"

namespace vt::data::cuda {
namespace {

constexpr int kThreads = 256, kRows = 4;  // a block: kRows output rows of one item

__device__ __forceinline__ uint8_t clip8(int v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Pillow's horizontal pass over every row of the box: mid[y][xx][c] = clip8(Σ src[y][x_first + x][c] · w[x]).
__global__ void __launch_bounds__(kThreads)
    horizontal_kernel(const uint8_t* __restrict__ images, const CropResizeItem* __restrict__ items,
                      const int32_t* __restrict__ coeffs, uint8_t* mid, int size) {
  const CropResizeItem it = items[blockIdx.y];
  const int y0 = blockIdx.x * kRows;
  if (y0 >= it.height) return;
  const int32_t* bounds = coeffs + it.h_coeffs;
  const int32_t* weights = bounds + 2 * size;
  const int rows = min(kRows, it.height - y0);
  for (int i = threadIdx.x; i < rows * size; i += kThreads) {
    const int r = i / size, xx = i % size;
    const int first = bounds[2 * xx], count = bounds[2 * xx + 1];
    const int32_t* w = weights + xx * it.h_taps;
    const uint8_t* p = images + it.source + static_cast<int64_t>(it.y + y0 + r) * it.stride + (it.x + first) * 3;
    int s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
    for (int x = 0; x < count; ++x, p += 3) {
      const int k = w[x];
      s0 += p[0] * k, s1 += p[1] * k, s2 += p[2] * k;
    }
    uint8_t* o = mid + it.mid + (static_cast<int64_t>(y0 + r) * size + xx) * 3;
    o[0] = clip8(s0), o[1] = clip8(s1), o[2] = clip8(s2);
  }
}

// Pillow's vertical pass over the horizontal pass's rows, the flip folded into the store.
__global__ void __launch_bounds__(kThreads)
    vertical_kernel(const CropResizeItem* __restrict__ items, const int32_t* __restrict__ coeffs,
                    const uint8_t* __restrict__ mid, uint8_t* out, int size) {
  const CropResizeItem it = items[blockIdx.y];
  const int y0 = blockIdx.x * kRows;
  const int32_t* bounds = coeffs + it.v_coeffs;
  const int32_t* weights = bounds + 2 * size;
  const int rows = min(kRows, size - y0);
  uint8_t* image = out + static_cast<int64_t>(blockIdx.y) * size * size * 3;
  for (int i = threadIdx.x; i < rows * size; i += kThreads) {
    const int yy = y0 + i / size, xx = i % size;
    const int first = bounds[2 * yy], count = bounds[2 * yy + 1];
    const int32_t* w = weights + yy * it.v_taps;
    const uint8_t* p = mid + it.mid + (static_cast<int64_t>(first) * size + xx) * 3;
    int s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
    for (int y = 0; y < count; ++y, p += size * 3) {
      const int k = w[y];
      s0 += p[0] * k, s1 += p[1] * k, s2 += p[2] * k;
    }
    uint8_t* o = image + (static_cast<int64_t>(yy) * size + (it.flip ? size - 1 - xx : xx)) * 3;
    o[0] = clip8(s0), o[1] = clip8(s1), o[2] = clip8(s2);
  }
}

}  // namespace

void crop_resize(const uint8_t* images, const CropResizeItem* items, const int32_t* coeffs, int batch, int size,
                 int max_height, uint8_t* mid, uint8_t* out, cudaStream_t stream) {
  if (batch == 0) return;
  const dim3 h_grid((max_height + kRows - 1) / kRows, batch), v_grid((size + kRows - 1) / kRows, batch);
  horizontal_kernel<<<h_grid, kThreads, 0, stream>>>(images, items, coeffs, mid, size);
  VT_CUDA_CHECK(cudaGetLastError());
  vertical_kernel<<<v_grid, kThreads, 0, stream>>>(items, coeffs, mid, out, size);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::data::cuda
