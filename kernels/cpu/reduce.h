// Reduction kernels over contiguous layouts.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// out[o] = Σ_r in[o, r]  (in: [outer, R])
void sum_rows(DType dtype, void* out, const void* in, int64_t outer, int64_t R);
/// out[i] = Σ_r in[r, i]  (in: [R, inner])
void sum_leading(DType dtype, void* out, const void* in, int64_t R, int64_t inner);
/// values[o] = max_r in[o, r], indices[o] = first arg-max (i64)  (in: [outer, R])
void max_rows(DType dtype, void* values, int64_t* indices, const void* in, int64_t outer, int64_t R);

}  // namespace vt::kernels::cpu
