// Convolutions and pooling on NCHW tensors.
#pragma once
#include "tensor/tensor.h"

namespace vt::ops {

/// Conv2d with stride == kernel size and no padding (patch embedding): x [B, C, H, W], weight [D, C, p, p],
/// bias [D] (may be undefined) → [B, D, H/p, W/p]. H and W must be multiples of p. On CUDA the result is a view
/// laid out channels last (the GEMM's token rows), so flattening it to tokens [B, G, D] is free.
Tensor conv2d_patch(const Tensor& x, const Tensor& weight, const Tensor& bias);
/// Depth-wise K×K conv, stride 1, zero padding K/2 (nn.Conv2d(C, C, K, padding=K // 2, groups=C)): x [B, C, H, W],
/// weight [C, 1, K, K] with K odd (3 or 5 on CUDA), bias [C] (may be undefined).
Tensor depthwise_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias);
/// depthwise_conv2d's gradients given g [B, C, H, W], the gradient of its output: dx [B, C, H, W], dweight
/// [C, 1, K, K] and dbias [C], each computed only when its pointer is not null (x's dtype on CUDA, g's on the CPU).
/// For ops that run the conv inside their own backward node (ops::mita_qkv_attention's DWC).
void depthwise_conv2d_grads(const Tensor& g, const Tensor& x, const Tensor& weight, Tensor* dx, Tensor* dweight,
                            Tensor* dbias);
/// PyTorch's adaptive average pooling: x [..., H, W] → [..., out_h, out_w]; bin i covers
/// [floor(i·H/out), ceil((i+1)·H/out)), so bins may overlap.
Tensor adaptive_avg_pool2d(const Tensor& x, int64_t out_h, int64_t out_w);
/// 1-D version over the last dim: x [..., L] → [..., out].
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t out);

}  // namespace vt::ops
