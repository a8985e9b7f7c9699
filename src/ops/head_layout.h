// Head-split [B, H, rows, d] operands of the fused attention ops (flash, MiTA): the layout their results use and
// the one requirement their kernels have on inputs. Internal to src/ops.
#pragma once
#include "kernels/shapes.h"  // AttentionView
#include "tensor/tensor.h"

namespace vt::ops {

/// A new [B, H, N, d] tensor whose memory is laid out [B, N, H, d], so transpose(1, 2).reshape({B, N, H·d}) is free.
Tensor empty_bnhd(int64_t B, int64_t H, int64_t N, int64_t d, DType dtype, Device dev);

/// t detached, or a copy when its last dim is not contiguous (the kernels step over rows, not elements).
Tensor row_contiguous(const Tensor& t);

/// A [B, H, rows, d] tensor as the kernels' view (CPU and CUDA): its data and the strides of b, h and row. A dim of
/// size 1 is never stepped over, so its stride is given as 0 (it must not fail the CUDA kernels' alignment checks).
kernels::AttentionView head_view(const Tensor& t);

}  // namespace vt::ops
