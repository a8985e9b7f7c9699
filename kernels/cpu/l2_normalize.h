// Row-wise L2 normalization x / max(‖x‖₂, eps) over the last dim, forward and backward (the row norm is
// saved). Used by ops::l2_normalize; kernels/cuda/l2_normalize.h is the device twin.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// y [rows, C] = x / max(‖x_row‖, eps); writes norm[row] = ‖x_row‖ (x's dtype, summed in double). f32 / f64.
void l2_normalize_forward(DType dtype, void* y, void* norm, const void* x, int64_t rows, int64_t C, double eps);

/// dx = (g − y·(y·g)) / ‖x‖ where ‖x‖ >= eps, else g / eps (the clamp passes no gradient to the norm);
/// y = x / max(‖x‖, eps). All [rows, C] contiguous in one dtype. f32 / f64.
void l2_normalize_backward(DType dtype, void* dx, const void* g, const void* x, const void* norm, int64_t rows,
                           int64_t C, double eps);

}  // namespace vt::kernels::cpu
