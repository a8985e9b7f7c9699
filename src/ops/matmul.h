// Matrix products on OpenBLAS (CPU) or cuBLASLt (CUDA): matmul with batch broadcasting, bmm, and linear (x Wᵀ + b).
// On CUDA the operands are f32 or bf16 (one dtype for all; bf16 accumulates in f32 and outputs bf16).
#pragma once
#include "tensor/tensor.h"

namespace vt::ops {

/// a [..., M, K] @ b [..., K, N]; batch dims broadcast; 1-D operands are not supported. bf16 with f32 computes in
/// f32 (promotion, as the element-wise ops).
Tensor matmul(const Tensor& a, const Tensor& b);
/// a [B, M, K] @ b [B, K, N].
Tensor bmm(const Tensor& a, const Tensor& b);
/// x [..., in] · weight [out, in]ᵀ + bias [out] (bias may be undefined).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

namespace detail {
/// CUDA only, no autograd: out [M, out] = x2 [M, in] · weightᵀ + bias, with x2 contiguous, weight [out, in] in any
/// 2-D layout (a transposed view is passed to cuBLASLt as such) and bias [out] of x2's dtype (may be undefined).
Tensor linear_2d_cuda(const Tensor& x2, const Tensor& weight, const Tensor& bias);
/// CUDA only: the gradients of linear_2d_cuda given g2 [M, out]; gx [M, in] = g2·W, gw = g2ᵀ·x2 with gb = column
/// sums of g2 fused into that GEMM where cuBLASLt allows; all in weight's dtype. Results not asked for stay
/// undefined; x2 is only read for gw (may be undefined otherwise).
void linear_2d_backward_cuda(const Tensor& g2, const Tensor& x2, const Tensor& weight, bool want_x, bool want_w,
                             bool want_b, Tensor& gx, Tensor& gw, Tensor& gb);
}  // namespace detail

}  // namespace vt::ops
