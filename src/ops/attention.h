// Scaled dot-product attention: softmax(scale·q·kᵀ)·v over [B, H, N, d] operands.
#pragma once
#include "tensor/tensor.h"

namespace vt::ops {

/// softmax(scale·q·kᵀ, -1)·v for q, k, v [B, H, N, d] (any strides; typically views of one qkv tensor).
/// CUDA bf16 with d in {32, 64, 128}: the fused flash kernels (f32 softmax statistics, one autograd node), and
/// the result is a [B, H, N, d] view of memory laid out [B, N, H, d], so out.transpose(1, 2).reshape({B, N, H·d})
/// is free. Otherwise (CPU, f32, other d): the composite matmul → softmax → matmul, differentiated by autograd.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale);

/// Attention straight from a packed qkv [B, N, 3·H·d] (timm's layout: [q; k; v] blocks, head h in columns
/// h·d..(h+1)·d of each) to [B, N, H·d]. Same maths as scaled_dot_product_attention on the views, but on CUDA
/// bf16 its backward writes dq, dk, dv into one [B, N, 3·H·d] gradient (one kernel, no slice/permute copies).
Tensor qkv_attention(const Tensor& qkv, int64_t heads, double scale);

}  // namespace vt::ops
