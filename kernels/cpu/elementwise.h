// Element-wise kernels: binary ops over broadcast strided operands, unary ops and their backward.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/shapes.h"

namespace vt::kernels::cpu {

/// out (contiguous, `shape`) = a op b, with a/b read through (possibly zero) strides.
void binary_forward(BinaryOp op, DType dtype, void* out, const void* a, const std::vector<int64_t>& a_strides,
                    const void* b, const std::vector<int64_t>& b_strides, const std::vector<int64_t>& shape);
/// out = a op s (scalar on the right) or s op a when `scalar_left`.
void binary_scalar(BinaryOp op, DType dtype, void* out, const void* a, double s, bool scalar_left, int64_t n);
void unary_forward(UnaryOp op, DType dtype, void* y, const void* x, int64_t n);
/// dx = dy · f'(x); kernels read whichever of x and y makes the formula cheapest.
void unary_backward(UnaryOp op, DType dtype, void* dx, const void* dy, const void* x, const void* y, int64_t n);

}  // namespace vt::kernels::cpu
