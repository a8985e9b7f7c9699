// Adaptive average pooling over the last two dims of contiguous [N, H, W] planes (1-D pooling is H = out_h = 1).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// PyTorch's bins: output i of `out` averages input [floor(i·in/out), ceil((i+1)·in/out)); bins may overlap.
inline int64_t adaptive_bin_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t adaptive_bin_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

/// out [N, oh, ow] ← x [N, H, W].
void adaptive_avg_pool2d_forward(DType dtype, void* out, const void* x, int64_t N, int64_t H, int64_t W, int64_t oh,
                                 int64_t ow);
/// dx [N, H, W] ← g [N, oh, ow]: each bin's grad / bin size added to every element of the bin.
void adaptive_avg_pool2d_backward(DType dtype, void* dx, const void* g, int64_t N, int64_t H, int64_t W, int64_t oh,
                                  int64_t ow);

}  // namespace vt::kernels::cpu
