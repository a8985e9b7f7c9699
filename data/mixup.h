// timm's Mixup / CutMix in "batch" mode: one λ per batch, each image mixed with the batch flipped (x.flip(0)),
// label smoothing folded into the soft targets. The parameters are drawn on the host (draw_mix); apply_mix runs
// on the images' device (CPU, or CUDA kernels in data/mixup_cuda on the current stream, bit-identical).
#pragma once
#include <cstdint>

#include "data/sample_rng.h"
#include "tensor/tensor.h"

namespace vt::data {

struct MixupConfig {
  double mixup_alpha = 0.8, cutmix_alpha = 1.0;
  double prob = 1.0, switch_prob = 0.5;
  double label_smoothing = 0.1;
  int64_t num_classes = 1000;
  bool correct_lam = true;  // λ = 1 − box area / image area after clipping the box
};

struct MixDraw {
  double lam = 1.0;  // weight of the original image (1: no mixing)
  bool cutmix = false;
  int y0 = 0, y1 = 0, x0 = 0, x1 = 0;  // the CutMix box, [y0, y1) x [x0, x1)
};

/// Beta(a, a) from the stream (Marsaglia-Tsang gammas).
double sample_beta(double a, SampleRng& rng);

/// The batch's λ, mode and box as timm's _params_per_batch + cutmix_bbox_and_lam draw them.
MixDraw draw_mix(const MixupConfig& cfg, int height, int width, SampleRng& rng);

/// Mixes f32 images [B, C, H, W] (CPU or CUDA; labels i64 on the same device) in place with their flipped batch
/// and returns the soft targets f32 [B, num_classes] on that device (smoothing off = s/C, on = 1 − s + s/C, then
/// λ·y + (1−λ)·y.flip(0)). B must be even (a clear error otherwise). No host synchronisation on CUDA.
Tensor apply_mix(Tensor& images, const Tensor& labels, const MixDraw& draw, const MixupConfig& cfg);

}  // namespace vt::data
