// Resizing of image-shaped tensors [B, C, H, W]: bilinear (PyTorch's F.interpolate), differentiable.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace vt::ops {

/// torch.nn.functional.interpolate(x, (out_h, out_w), mode="bilinear", align_corners=False) of x [B, C, H, W]
/// (up or down, no antialias). Differentiable in x. CPU f32/f64; CUDA f32/bf16 (f32 math, output x's dtype).
Tensor interpolate_bilinear(const Tensor& x, int64_t out_h, int64_t out_w);

}  // namespace vt::ops
