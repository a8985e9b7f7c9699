// Host-visible launchers of the CUDA element-wise kernels: binary ops over broadcast strided operands (with the
// bf16 ⊕ f32 → f32 promotion), scalar ops, unary ops and their backward. Float dtypes f32, bf16 (math in f32) and
// f64. The op enums are the CPU kernels' (kernels/cpu/elementwise.h), so front-ends name an op once.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/device_handles.h"
#include "kernels/shapes.h"

namespace vt::kernels::cuda {

/// out (contiguous, `shape`, out_dtype) = a op b, with a/b read through (possibly zero) strides in their own
/// dtypes. Dtypes: all equal (f32, bf16, f64), or f32 output with f32/bf16 inputs. At most 8 dims after merging.
/// `out` may alias `a` when a is contiguous with `shape` (in-place add).
void binary_forward(BinaryOp op, DType out_dtype, void* out, DType a_dtype, const void* a,
                    const std::vector<int64_t>& a_strides, DType b_dtype, const void* b,
                    const std::vector<int64_t>& b_strides, const std::vector<int64_t>& shape, KernelStream stream);
/// out = a op s (scalar on the right) or s op a when `scalar_left`; n contiguous elements (out may alias a).
void binary_scalar(BinaryOp op, DType dtype, void* out, const void* a, double s, bool scalar_left, int64_t n,
                   KernelStream stream);
/// y = f(x) over n contiguous elements.
void unary_forward(UnaryOp op, DType dtype, void* y, const void* x, int64_t n, KernelStream stream);
/// dx = dy · f'(x), reading x or y as the CPU kernel does (exp, sqrt, rsqrt, tanh, sigmoid read y; log, gelu,
/// silu, square, relu read x; neg reads neither).
void unary_backward(UnaryOp op, DType dtype, void* dx, const void* dy, const void* x, const void* y, int64_t n,
                    KernelStream stream);

/// y = x·Φ(x) (exact erf GELU), n f32 elements (unary_forward with UnaryOp::gelu).
void gelu_forward(float* y, const float* x, int64_t n, KernelStream stream);
/// dx = dy·(Φ(x) + x·φ(x)), f32 (unary_backward with UnaryOp::gelu).
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n, KernelStream stream);

/// True when a CUDA device can be used (false without a driver or GPU).
bool device_available();

}  // namespace vt::kernels::cuda
