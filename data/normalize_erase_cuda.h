// Device side of data/normalize_erase. Built only with CUDA.
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <cstdint>

namespace vt::data::cuda {

/// out f32 [B, C, H, W] = (pixels u8 [B, H, W, C] / 255 - mean[c]) / std[c], then each sample's erasing box (rows of
/// i64 [B, 5], may be null) filled with rng::normal_at(seed, 0, e).
void normalize_and_erase(const uint8_t* pixels, const int64_t* erasing, float* out, int64_t batch, int channels,
                         int height, int width, const std::array<float, 3>& mean, const std::array<float, 3>& std,
                         cudaStream_t stream);

}  // namespace vt::data::cuda
