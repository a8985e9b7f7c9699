// Host-visible launchers of the CUDA reductions over a contiguous [outer, R, inner] layout (the reduced dims are
// one contiguous block R between the kept dims), float dtypes f32, bf16 and f64, accumulated in f32 (f64 for
// f64) and stored in the input dtype.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// Elements of the accumulation type (f64 for f64, else f32) that sum_forward needs as scratch (0: none).
/// Depends only on the sizes, so the summation order (and result) is the same on every run.
int64_t sum_workspace_size(int64_t outer, int64_t R, int64_t inner);
/// out[o, i] = scale · Σ_r in[o, r, i]  (in: [outer, R, inner]; out: [outer, inner]). `workspace` holds
/// sum_workspace_size(outer, R, inner) accumulation-type elements (null when that is 0). R may be 0.
void sum_forward(DType dtype, void* out, const void* in, int64_t outer, int64_t R, int64_t inner, double scale,
                 void* workspace, KernelStream stream);
/// values[o, i] = max_r in[o, r, i], indices[o, i] = its first arg-max (i64). R > 0.
void max_forward(DType dtype, void* values, int64_t* indices, const void* in, int64_t outer, int64_t R, int64_t inner,
                 KernelStream stream);
/// dx[o, indices[o, i], i] = dy[o, i]; dx ([outer, R, inner]) must be zeroed by the caller.
void max_backward(DType dtype, void* dx, const void* dy, const int64_t* indices, int64_t outer, int64_t R,
                  int64_t inner, KernelStream stream);

}  // namespace vt::kernels::cuda
