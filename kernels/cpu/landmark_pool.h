// MiTA's landmark pooling (docs/mita-spec.md §2.2) as one kernel: the mean of the queries in each adaptive-pooling
// bin, read in place from a strided [B, N, C] view (typically q inside the packed qkv, row stride 3C), written as
// contiguous landmarks [B, m, C]; and its backward into a contiguous dx [B, N, C]. Used by ops::mita_landmark_pool;
// kernels/cuda/mita/landmark_pool.h is the device twin and shares LandmarkPoolShape.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/shapes.h"

namespace vt::kernels::cpu {

/// out [B, m, C] (contiguous) = mean of x[b, first + t, :] over the tokens t of each bin. f32 / f64.
void landmark_pool_forward(DType dtype, void* out, const void* x, const LandmarkPoolShape& s);

/// dx [B, N, C] (contiguous) = Σ over the bins j holding token n of dout[b, j, :] / |bin j|; 0 outside the pooled
/// tokens. dout [B, m, C] contiguous. f32 / f64.
void landmark_pool_backward(DType dtype, void* dx, const void* dout, const LandmarkPoolShape& s);

}  // namespace vt::kernels::cpu
