// Host-visible launchers of the CUDA softmax / log-softmax kernels over one dim of a contiguous tensor viewed
// as (outer, R, inner), the same view as kernels/cpu/softmax.h. f32 or bf16 in and out, f32 math.
// Used by ops::softmax / ops::log_softmax on CUDA tensors (attention probabilities, classifier heads).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// y = softmax(x) (log_softmax when `log`) along R; x, y: (outer, R, inner) contiguous of `dtype` (f32 or bf16).
void softmax_forward(DType dtype, void* y, const void* x, int64_t outer, int64_t R, int64_t inner, bool log,
                     KernelStream stream);
/// softmax: dx = y·(dy − Σ dy·y);  log_softmax: dx = dy − exp(y)·Σ dy  (sums along R); all of `dtype`.
void softmax_backward(DType dtype, void* dx, const void* dy, const void* y, int64_t outer, int64_t R, int64_t inner,
                      bool log, KernelStream stream);

}  // namespace vt::kernels::cuda
