// Host-visible launchers of the fused CUDA softmax + cross-entropy kernels on logits (B, C), f32 or bf16.
// The forward computes each row's loss with a log-sum-exp in f32 and saves only lse[b]; the mean over rows is
// reduced on the device (no host sync). The backward recomputes softmax from logits and lse and writes dlogits
// in the logits' dtype in one pass. Used by ops::cross_entropy and ops::soft_target_cross_entropy on CUDA.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// row_loss[b] = (1−s)·(lse_b − x[b, t_b]) + s·(lse_b − mean_c x[b, c]); writes lse[b] and *loss = mean_b row_loss
/// (all f32). A target outside [0, C) gives a NaN row loss (checking it on the host would need a sync).
void cross_entropy_forward(DType logits_dtype, float* loss, float* lse, float* row_loss, const void* logits,
                           const int64_t* target, int64_t B, int64_t C, double smoothing, KernelStream stream);
/// dlogits = (softmax − ((1−s)·onehot + s/C))·(*dloss / B), dlogits in logits_dtype; dloss is a device scalar.
void cross_entropy_backward(DType logits_dtype, void* dlogits, const void* logits, const float* lse,
                            const int64_t* target, const float* dloss, int64_t B, int64_t C, double smoothing,
                            KernelStream stream);

/// row_loss[b] = −Σ_c target[b, c]·(x[b, c] − lse_b); writes lse[b] and *loss = mean_b row_loss (f32).
/// target (B, C) is f32 or bf16.
void soft_target_cross_entropy_forward(DType logits_dtype, DType target_dtype, float* loss, float* lse, float* row_loss,
                                       const void* logits, const void* target, int64_t B, int64_t C,
                                       KernelStream stream);
/// dlogits = (softmax·Σ_c target − target)·k and dtarget = −(x − lse)·k with k = *dloss / B; either output may be
/// null; each is written in its input's dtype.
void soft_target_cross_entropy_backward(DType logits_dtype, DType target_dtype, void* dlogits, void* dtarget,
                                        const void* logits, const void* target, const float* lse, const float* dloss,
                                        int64_t B, int64_t C, KernelStream stream);

}  // namespace vt::kernels::cuda
