// Convolution kernels on contiguous NCHW buffers: the patch-embedding im2col/col2im pair (stride == kernel, so
// patches never overlap) and the depth-wise K×K conv (K odd, stride 1, zero padding K/2) with its backward.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// cols [B·Gh·Gw, C·p·p] ← x [B, C, Gh·p, Gw·p]; row (b, gy, gx), column (c, ky, kx) matches weight [D, C, p, p].
void im2col_patch(DType dtype, void* cols, const void* x, int64_t B, int64_t C, int64_t Gh, int64_t Gw, int64_t p);
/// The inverse: dx [B, C, Gh·p, Gw·p] ← cols (every element of dx is written exactly once).
void col2im_patch(DType dtype, void* dx, const void* cols, int64_t B, int64_t C, int64_t Gh, int64_t Gw, int64_t p);

/// out [B, C, H, W] = depth-wise K×K conv of x with weight [C, K²] (+ bias [C] when not null).
void depthwise_forward(DType dtype, void* out, const void* x, const void* weight, const void* bias, int64_t B,
                       int64_t C, int64_t H, int64_t W, int64_t K);
/// Gradients of depthwise_forward given g [B, C, H, W]; any of dx, dweight [C, K²], dbias [C] may be null.
void depthwise_backward(DType dtype, void* dx, void* dweight, void* dbias, const void* g, const void* x,
                        const void* weight, int64_t B, int64_t C, int64_t H, int64_t W, int64_t K);

}  // namespace vt::kernels::cpu
