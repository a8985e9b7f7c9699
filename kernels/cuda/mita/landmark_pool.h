// CUDA landmark pooling for MiTA: the device twin of kernels/cpu/landmark_pool.h (same LandmarkPoolShape, same
// bins). f32 or bf16 storage, f32 accumulation; no atomics, so results do not depend on scheduling.
#pragma once
#include "core/dtype.h"
#include "kernels/device_handles.h"
#include "kernels/shapes.h"

namespace vt::kernels::cuda {

/// out [B, m, C] (contiguous) = mean of x[b, first + t, :] over the tokens t of each bin; x read in place through
/// s.batch_stride / s.row_stride (channels contiguous).
void landmark_pool_forward(DType dtype, void* out, const void* x, const LandmarkPoolShape& s, KernelStream stream);

/// dx [B, N, C] (contiguous) = Σ over the bins j holding token n of dout[b, j, :] / |bin j|, 0 outside the pooled
/// tokens; dout [B, m, C] contiguous. One thread per (b, n, channel group) output.
void landmark_pool_backward(DType dtype, void* dx, const void* dout, const LandmarkPoolShape& s, KernelStream stream);

}  // namespace vt::kernels::cuda
