// Softmax and log-softmax kernels over one dim of a contiguous tensor viewed as (outer, R, inner):
// forward is numerically stable (max subtracted), backward is fused from the saved output.
// Used by ops::softmax / ops::log_softmax (attention probabilities, classifier heads).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// y = softmax(x) (or log_softmax when `log`) along R; x, y: (outer, R, inner) contiguous.
void softmax_forward(DType dtype, void* y, const void* x, int64_t outer, int64_t R, int64_t inner, bool log);
/// softmax: dx = y·(dy − Σ dy·y);  log_softmax: dx = dy − exp(y)·Σ dy  (sums along R).
void softmax_backward(DType dtype, void* dx, const void* dy, const void* y, int64_t outer, int64_t R, int64_t inner,
                      bool log);

}  // namespace vt::kernels::cpu
