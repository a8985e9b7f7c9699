// CUDA row-wise L2 normalization x / max(‖x‖₂, eps): the device twin of kernels/cpu/l2_normalize.h. A warp per
// row, f32 sums; f32 or bf16 storage.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// y [rows, C] = x / max(‖x_row‖, eps) in x's dtype; norm[row] = ‖x_row‖ (f32).
void l2_normalize_forward(DType dtype, void* y, float* norm, const void* x, int64_t rows, int64_t C, double eps,
                          KernelStream stream);

/// dx = (g − y·(y·g)) / ‖x‖ where ‖x‖ >= eps, else g / eps; g, x, dx in `dtype`, [rows, C] contiguous.
void l2_normalize_backward(DType dtype, void* dx, const void* g, const void* x, const float* norm, int64_t rows,
                           int64_t C, double eps, KernelStream stream);

}  // namespace vt::kernels::cuda
