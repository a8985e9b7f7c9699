// MiTA's landmark pooling (docs/mita-spec.md §2.2) as one kernel: the mean of the queries in each adaptive-pooling
// bin, read in place from a strided [B, N, C] view (typically q inside the packed qkv, row stride 3C), written as
// contiguous landmarks [B, m, C]; and its backward into a contiguous dx [B, N, C]. Used by ops::mita_landmark_pool;
// kernels/cuda/mita/landmark_pool.h is the device twin and shares LandmarkPoolShape.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// Which tokens are pooled and how. Bins are PyTorch's adaptive ones (kernels/cpu/pool.h), so they may overlap.
struct LandmarkPoolShape {
  int64_t B = 0, N = 0, C = 0;  // x / dx [B, N, C]
  int64_t first = 0, L = 0;     // the pooled tokens are first .. first + L - 1
  int64_t grid = 0;             // G > 0: the L = G² tokens are a row-major G×G grid pooled to p×p (m = p²); 0: 1-D
  int64_t m = 0;                // landmarks; 2-D landmark j = row·p + col
  int64_t pool = 0;             // p (2-D only)
  int64_t batch_stride = 0, row_stride = 0;  // x's strides in elements (forward only); channels are contiguous
};

/// out [B, m, C] (contiguous) = mean of x[b, first + t, :] over the tokens t of each bin. f32 / f64.
void landmark_pool_forward(DType dtype, void* out, const void* x, const LandmarkPoolShape& s);

/// dx [B, N, C] (contiguous) = Σ over the bins j holding token n of dout[b, j, :] / |bin j|; 0 outside the pooled
/// tokens. dout [B, m, C] contiguous. f32 / f64.
void landmark_pool_backward(DType dtype, void* dx, const void* dout, const LandmarkPoolShape& s);

}  // namespace vt::kernels::cpu
