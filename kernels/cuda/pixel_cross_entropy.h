// CUDA pixel cross-entropy over logits [B, K, H, W] with an ignore label: the device twin of
// kernels/cpu/pixel_cross_entropy.h. One thread per pixel walks the K classes (reads coalesced across pixels)
// with an online log-sum-exp in f32; per-block partial sums and valid-pixel counts are reduced by one block in a
// fixed order, which also divides on the device (no host sync, deterministic).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"
#include "kernels/shapes.h"

namespace vt::kernels::cuda {

/// f32 elements of scratch the forward needs (per-block partial sums and counts).
int64_t pixel_cross_entropy_scratch(const PixelCeShape& s);

/// *loss = Σ over counted pixels of (lse − x[target]) / count, 0 when every pixel is ignored; *inv_count =
/// 1 / count (0 when none); lse [B, P] f32. logits f32 or bf16. A target outside [0, K) that is not ignore_index
/// gives a NaN loss (checking it on the host would need a sync).
void pixel_cross_entropy_forward(DType logits_dtype, float* loss, float* inv_count, float* lse, const void* logits,
                                 const int64_t* target, const PixelCeShape& s, float* scratch, KernelStream stream);

/// dlogits = (softmax − onehot)·(*dloss)·(*inv_count) at counted pixels, 0 at ignored ones; in logits_dtype.
void pixel_cross_entropy_backward(DType logits_dtype, void* dlogits, const void* logits, const float* lse,
                                  const int64_t* target, const float* dloss, const float* inv_count,
                                  const PixelCeShape& s, KernelStream stream);

}  // namespace vt::kernels::cuda
