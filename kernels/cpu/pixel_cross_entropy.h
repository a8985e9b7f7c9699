// Per-pixel softmax cross-entropy of segmentation logits [B, K, H, W] (classes strided by P = H·W) against
// class maps [B, H, W] with an ignore label, saving each pixel's log-sum-exp for the backward. Used by
// ops::pixel_cross_entropy; kernels/cuda/pixel_cross_entropy.h is the device twin.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/shapes.h"

namespace vt::kernels::cpu {

struct PixelCeSum {
  double total = 0;   // Σ over counted pixels of lse − x[target]
  int64_t count = 0;  // pixels whose target != ignore_index
};

/// Sums the loss of the pixels whose target is not ignore_index and writes lse [B, P] (logits' dtype; 0 at
/// ignored pixels). Targets must already be validated (ignore_index or in [0, K)). f32 / f64.
PixelCeSum pixel_cross_entropy_forward(DType dtype, void* lse, const void* logits, const int64_t* target,
                                       const PixelCeShape& s);

/// dlogits [B, K, P] = (softmax − onehot(target))·scale at counted pixels, 0 at ignored ones. f32 / f64.
void pixel_cross_entropy_backward(DType dtype, void* dlogits, const void* logits, const void* lse,
                                  const int64_t* target, const PixelCeShape& s, double scale);

}  // namespace vt::kernels::cpu
