#include "data/normalize_erase.h"
#include "data/normalize_erase_cuda.h"
#include "kernels/cuda/check.h"

namespace vt::data::cuda {
namespace {

struct Table {
  float value[3][256];  // per channel: the f32 result for each 8-bit value, computed on the host as the CPU does
};

// One thread per output value of the batch; reads of the HWC pixels are strided by C, writes are coalesced.
__global__ void normalize_erase_kernel(const uint8_t* __restrict__ pixels, const int64_t* __restrict__ erasing,
                                       float* __restrict__ out, int64_t total, int channels, int height, int width,
                                       Table table) {
  const int64_t plane = static_cast<int64_t>(height) * width, per_image = plane * channels;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = i / per_image, rem = i % per_image;
    const int c = static_cast<int>(rem / plane);
    const int y = static_cast<int>((rem % plane) / width), x = static_cast<int>(rem % width);
    float v = table.value[c][pixels[(b * plane + static_cast<int64_t>(y) * width + x) * channels + c]];
    if (erasing) {
      const int64_t* e = erasing + b * kErasingColumns;
      const int bx = static_cast<int>(e[kEraseX]), by = static_cast<int>(e[kEraseY]);
      const int bw = static_cast<int>(e[kEraseWidth]), bh = static_cast<int>(e[kEraseHeight]);
      if (bw > 0 && x >= bx && x < bx + bw && y >= by && y < by + bh) {
        const uint64_t k = (static_cast<uint64_t>(c) * bh + (y - by)) * bw + (x - bx);
        v = rng::normal_at(static_cast<uint64_t>(e[kEraseSeed]), 0, k);
      }
    }
    out[i] = v;
  }
}

}  // namespace

void normalize_and_erase(const uint8_t* pixels, const int64_t* erasing, float* out, int64_t batch, int channels,
                         int height, int width, const std::array<float, 3>& mean, const std::array<float, 3>& std,
                         cudaStream_t stream) {
  Table t{};
  for (int c = 0; c < channels; ++c)
    for (int v = 0; v < 256; ++v) t.value[c][v] = (static_cast<float>(v) / 255.0f - mean[c]) / std[c];
  const int64_t total = batch * channels * static_cast<int64_t>(height) * width;
  if (total == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, 132 * 32);
  normalize_erase_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(pixels, erasing, out, total, channels,
                                                                                 height, width, t);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::data::cuda
