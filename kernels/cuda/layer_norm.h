// Host-visible launchers of the fused CUDA LayerNorm over the last dim of a contiguous (rows, C) tensor.
// x and y may each be f32 or bf16 (an f32 residual stream can produce a bf16 normalised output directly);
// weight/bias and the saved statistics are f32. Used by ops::layer_norm on CUDA tensors.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// y = (x − mean)·rstd·w + b per row, statistics in f32; w, b may be null (1 and 0); mean, rstd: f32 [rows].
void layer_norm_forward(DType x_dtype, DType y_dtype, void* y, float* mean, float* rstd, const void* x, const float* w,
                        const float* b, int64_t rows, int64_t C, double eps, KernelStream stream);

/// A residual add fused with the LayerNorm after it: sum = x + add (f32, as the separate add rounds it), then
/// y = layer_norm(sum) as layer_norm_forward computes it (same bits). add is f32 or bf16. Only the packed path
/// (C a multiple of 4 up to the packed limit, 16-byte aligned rows): returns false, launching nothing, otherwise.
bool add_layer_norm_forward(DType add_dtype, DType y_dtype, float* sum, void* y, float* mean, float* rstd,
                            const float* x, const void* add, const float* w, const float* b, int64_t rows, int64_t C,
                            double eps, KernelStream stream);

/// Number of f32 scratch elements layer_norm_backward needs for its per-block dw/db partial sums.
int64_t layer_norm_backward_scratch(int64_t rows, int64_t C);

/// dx (x_dtype) = dres + rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·w; dw = Σ_rows dy·x̂, db = Σ_rows dy (f32,
/// summed per block then across blocks in a fixed order: deterministic, no atomics). dx, dw, db may each be null;
/// w and dres (x_dtype, [rows, C]: a gradient already waiting for x) may be null. `scratch` holds
/// layer_norm_backward_scratch(rows, C) floats (unused when dw and db are null).
void layer_norm_backward(DType x_dtype, DType dy_dtype, void* dx, const void* dres, float* dw, float* db,
                         const void* dy, const void* x, const float* mean, const float* rstd, const float* w,
                         int64_t rows, int64_t C, float* scratch, KernelStream stream);

}  // namespace vt::kernels::cuda
