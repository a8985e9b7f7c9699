// Matrix products on OpenBLAS (CPU): matmul with batch broadcasting, bmm, and linear (x Wᵀ + b).
#pragma once
#include "tensor/tensor.h"

namespace vt::ops {

/// a [..., M, K] @ b [..., K, N]; batch dims broadcast; 1-D operands are not supported.
Tensor matmul(const Tensor& a, const Tensor& b);
/// a [B, M, K] @ b [B, K, N].
Tensor bmm(const Tensor& a, const Tensor& b);
/// x [..., in] · weight [out, in]ᵀ + bias [out] (bias may be undefined).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace vt::ops
