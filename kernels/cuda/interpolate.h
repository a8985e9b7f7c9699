// CUDA bilinear resize (align_corners=False): the device twin of kernels/cpu/interpolate.h, same BilinearShape
// and the same taps (bilinear_taps<float>). f32 or bf16 storage, f32 math. The backward gathers (one thread per
// input element sums the output gradients that read it, in a fixed order): no atomics, deterministic.
#pragma once
#include "core/dtype.h"
#include "kernels/device_handles.h"
#include "kernels/shapes.h"

namespace vt::kernels::cuda {

/// out [planes, out_h, out_w] = bilinear resize of x [planes, in_h, in_w] (contiguous).
void bilinear_forward(DType dtype, void* out, const void* x, const BilinearShape& s, KernelStream stream);

/// dx [planes, in_h, in_w] = the adjoint of the forward applied to dout [planes, out_h, out_w] (contiguous,
/// same dtype as dx).
void bilinear_backward(DType dtype, void* dx, const void* dout, const BilinearShape& s, KernelStream stream);

}  // namespace vt::kernels::cuda
