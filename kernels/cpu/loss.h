// Fused classification-loss kernels on logits (B, C): log-softmax and the loss in one pass per row, saving
// the row log-sum-exp for the backward. Used by ops::cross_entropy and ops::soft_target_cross_entropy.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// Returns Σ_b [−(1−s)·logp[b, t_b] − (s/C)·Σ_c logp[b, c]]; writes lse[b] (dtype of logits).
/// Targets must already be validated to lie in [0, C).
double cross_entropy_forward(DType dtype, void* lse, const void* logits, const int64_t* target, int64_t B, int64_t C,
                             double smoothing);
/// dlogits = (softmax − ((1−s)·onehot + s/C))·scale.
void cross_entropy_backward(DType dtype, void* dlogits, const void* logits, const void* lse, const int64_t* target,
                            int64_t B, int64_t C, double smoothing, double scale);

/// Returns Σ_b −Σ_c target[b, c]·logp[b, c]; writes lse[b]. target has the dtype of logits.
double soft_target_cross_entropy_forward(DType dtype, void* lse, const void* logits, const void* target, int64_t B,
                                         int64_t C);
/// dlogits = (softmax·Σ_c target − target)·scale and dtarget = −logp·scale; either output may be null.
void soft_target_cross_entropy_backward(DType dtype, void* dlogits, void* dtarget, const void* logits,
                                        const void* target, const void* lse, int64_t B, int64_t C, double scale);

}  // namespace vt::kernels::cpu
