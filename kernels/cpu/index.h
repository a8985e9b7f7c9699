// Indexing kernels: row selection along a dim, gather / scatter-add with torch semantics over strided operands,
// and per-row top-k. Index values are assumed validated by the caller (the front-ends range-check them).
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// out [outer, k, inner] = x [outer, n, inner] at rows idx[0..k) of the middle dim. Any dtype.
void index_select_rows(DType dtype, void* out, const void* x, const int64_t* idx, int64_t outer, int64_t n, int64_t k,
                       int64_t inner);
/// out [outer, n, inner] += src [outer, k, inner] into rows idx[0..k) (repeated rows accumulate). f32/f64.
void index_add_rows(DType dtype, void* out, const void* src, const int64_t* idx, int64_t outer, int64_t n, int64_t k,
                    int64_t inner);

/// Over every position i of `shape` (the index's shape), row-major:
///   out[i] = x[i with coordinate `dim` replaced by index[i]].
/// x is described by its strides; out and index are contiguous with `shape`. Any dtype.
void gather_strided(DType dtype, void* out, const void* x, const std::vector<int64_t>& x_strides, const int64_t* index,
                    const std::vector<int64_t>& shape, int64_t dim);
/// Over every position i of `shape`: out[i with coordinate `dim` replaced by index[i]] += src[i].
/// out and src are described by their strides; index is contiguous with `shape`. f32/f64.
void scatter_add_strided(DType dtype, void* out, const std::vector<int64_t>& out_strides, const void* src,
                         const std::vector<int64_t>& src_strides, const int64_t* index,
                         const std::vector<int64_t>& shape, int64_t dim);

/// For each row of x [outer, R]: the k largest values in descending order (ties: lower index first, NaN counts as
/// the largest) and their i64 positions. values/indices are [outer, k].
void topk_rows(DType dtype, void* values, int64_t* indices, const void* x, int64_t outer, int64_t R, int64_t k);

}  // namespace vt::kernels::cpu
