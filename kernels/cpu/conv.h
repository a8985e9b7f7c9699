// Convolution kernels on contiguous NCHW buffers: the patch-embedding im2col/col2im pair (stride == kernel, so
// patches never overlap) and the depth-wise 3×3 conv (stride 1, zero padding 1) with its backward.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// cols [B·Gh·Gw, C·p·p] ← x [B, C, Gh·p, Gw·p]; row (b, gy, gx), column (c, ky, kx) matches weight [D, C, p, p].
void im2col_patch(DType dtype, void* cols, const void* x, int64_t B, int64_t C, int64_t Gh, int64_t Gw, int64_t p);
/// The inverse: dx [B, C, Gh·p, Gw·p] ← cols (every element of dx is written exactly once).
void col2im_patch(DType dtype, void* dx, const void* cols, int64_t B, int64_t C, int64_t Gh, int64_t Gw, int64_t p);

/// out [B, C, H, W] = depth-wise 3×3 conv of x with weight [C, 9] (+ bias [C] when not null).
void depthwise3x3_forward(DType dtype, void* out, const void* x, const void* weight, const void* bias, int64_t B,
                          int64_t C, int64_t H, int64_t W);
/// Gradients of depthwise3x3_forward given g [B, C, H, W]; any of dx, dweight [C, 9], dbias [C] may be null.
void depthwise3x3_backward(DType dtype, void* dx, void* dweight, void* dbias, const void* g, const void* x,
                           const void* weight, int64_t B, int64_t C, int64_t H, int64_t W);

}  // namespace vt::kernels::cpu
