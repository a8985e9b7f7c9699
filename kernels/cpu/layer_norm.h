// LayerNorm kernels over the last dim of a contiguous (rows, C) tensor. The forward saves the per-row mean
// and rstd = 1/sqrt(var + eps) so the fused backward needs no second statistics pass.
// Used by ops::layer_norm (every transformer block: rows = B·N tokens, C = embedding width).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// y = (x − mean)·rstd·w + b; w, b may be null (1 and 0). mean, rstd: [rows], same dtype as x.
void layer_norm_forward(DType dtype, void* y, void* mean, void* rstd, const void* x, const void* w, const void* b,
                        int64_t rows, int64_t C, double eps);
/// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·w, x̂ = (x − mean)·rstd;
/// dw = Σ_rows dy·x̂, db = Σ_rows dy. Any of dx, dw, db may be null (not computed); w may be null.
/// dres (may be null; [rows, C] like dx) is a gradient to add: dx = dres + the above (a residual branch's).
void layer_norm_backward(DType dtype, void* dx, const void* dres, void* dw, void* db, const void* dy, const void* x,
                         const void* mean, const void* rstd, const void* w, int64_t rows, int64_t C);

}  // namespace vt::kernels::cpu
