// Bilinear resizing of [planes, H, W] images (torch.nn.functional.interpolate, mode="bilinear",
// align_corners=False, no antialias), forward and backward. Used by ops::interpolate_bilinear;
// kernels/cuda/interpolate.h is the device twin (BilinearShape in kernels/shapes.h, the taps in
// kernels/bilinear_taps.h).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/shapes.h"

namespace vt::kernels::cpu {

/// out [planes, out_h, out_w] = bilinear resize of x [planes, in_h, in_w]. f32 / f64.
void bilinear_forward(DType dtype, void* out, const void* x, const BilinearShape& s);

/// dx [planes, in_h, in_w] = the adjoint of the forward applied to dout [planes, out_h, out_w]. f32 / f64.
void bilinear_backward(DType dtype, void* dx, const void* dout, const BilinearShape& s);

}  // namespace vt::kernels::cpu
