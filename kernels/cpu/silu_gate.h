// MiTA's gate y = x ⊙ SiLU(g) and its backward on row-strided operands: [rows, cols] with contiguous columns and
// each operand's own row stride (x and g may be slices of a packed tensor). f32 or f64.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// y (contiguous [rows, cols]) = x ⊙ g / (1 + e^(−g)).
void silu_gate_forward(DType dtype, void* y, const void* x, int64_t x_stride, const void* g, int64_t g_stride,
                       int64_t rows, int64_t cols);

/// dx = dy ⊙ SiLU(g), dg = dy ⊙ x ⊙ σ(g)(1 + g(1 − σ(g))); dy, dx and dg contiguous [rows, cols].
void silu_gate_backward(DType dtype, void* dx, void* dg, const void* dy, const void* x, int64_t x_stride, const void* g,
                        int64_t g_stride, int64_t rows, int64_t cols);

}  // namespace vt::kernels::cpu
