// The CUDA twins of kernels/cpu/silu_gate.h: MiTA's gate y = x ⊙ SiLU(g) and its backward, one pass each way, on
// row-strided operands ([rows, cols], contiguous columns, each operand's own row stride). f32, bf16 (math in f32,
// rounded once at the store) and f64.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// y (contiguous [rows, cols]) = x ⊙ g / (1 + e^(−g)).
void silu_gate_forward(DType dtype, void* y, const void* x, int64_t x_stride, const void* g, int64_t g_stride,
                       int64_t rows, int64_t cols, KernelStream stream);

/// dx = dy ⊙ SiLU(g), dg = dy ⊙ x ⊙ σ(g)(1 + g(1 − σ(g))); dy, dx and dg contiguous [rows, cols].
void silu_gate_backward(DType dtype, void* dx, void* dg, const void* dy, const void* x, int64_t x_stride, const void* g,
                        int64_t g_stride, int64_t rows, int64_t cols, KernelStream stream);

}  // namespace vt::kernels::cuda
