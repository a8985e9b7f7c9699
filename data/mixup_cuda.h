// Device side of data/mixup: the batch-mode Mixup blend / CutMix box swap in place and the soft targets, from a
// MixDraw drawn on the host (so no host<->device synchronisation). Same f32 arithmetic as the CPU version
// (no fused multiply-add), so results are bit-identical. Built only with CUDA.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace vt::data::cuda {

/// Mixup: x[i] = lam*x[i] + (1-lam)*x[B-1-i] for every pair, in place; f32 [B, per_image], B even.
void mixup_blend(float* images, int64_t batch, int64_t per_image, float lam, float rest, cudaStream_t stream);

/// CutMix: swaps the box [y0, y1) x [x0, x1) of every channel between images i and B-1-i, in place.
void cutmix_swap(float* images, int64_t batch, int64_t channels, int64_t height, int64_t width, int y0, int y1, int x0,
                 int x1, cudaStream_t stream);

/// targets[i, k] = base, + add_own where k = labels[i], + add_other where k = labels[B-1-i] (f32 [B, classes]);
/// labels outside 0..classes-1 add nothing (the device cannot throw; the CPU version checks).
void mix_targets(float* targets, const int64_t* labels, int64_t batch, int64_t classes, float base, float add_own,
                 float add_other, cudaStream_t stream);

}  // namespace vt::data::cuda
