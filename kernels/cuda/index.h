// CUDA indexing kernels: row selection along a dim, gather / scatter-add with torch semantics over strided
// operands, and per-row top-k; the device twins of kernels/cpu/index.h. Index values live on the device and are
// not range-checked by the front-ends (that would synchronize the host): an out-of-range index reads 0 (gather,
// index_select) or adds nothing (scatter_add, index_add). Accumulating kernels add into f32 with atomicAdd, so a
// bf16 result is accumulated in an f32 buffer by the caller and converted once.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// out [outer, k, inner] = x [outer, n, inner] at rows idx[0..k) of the middle dim. Any dtype.
void index_select_rows(DType dtype, void* out, const void* x, const int64_t* idx, int64_t outer, int64_t n, int64_t k,
                       int64_t inner, KernelStream stream);
/// out [outer, n, inner] (f32) += src [outer, k, inner] (f32 or bf16) into rows idx[0..k).
void index_add_rows(float* out, const void* src, DType src_dtype, const int64_t* idx, int64_t outer, int64_t n,
                    int64_t k, int64_t inner, KernelStream stream);

/// Over every position i of `shape` (the index's shape, ≤ 8 dims), row-major:
///   out[i] = x[i with coordinate `dim` replaced by index[i]], where x has size `bound` along dim.
/// x is described by its strides; out and index are contiguous with `shape`. Any dtype.
void gather_strided(DType dtype, void* out, const void* x, const std::vector<int64_t>& x_strides, int64_t bound,
                    const int64_t* index, const std::vector<int64_t>& shape, int64_t dim, KernelStream stream);
/// Over every position i of `shape`: out[i with coordinate `dim` replaced by index[i]] += src[i].
/// out (f32, size `bound` along dim) and src (f32 or bf16) are strided; index is contiguous with `shape`.
void scatter_add_strided(float* out, const std::vector<int64_t>& out_strides, int64_t bound, const void* src,
                         DType src_dtype, const std::vector<int64_t>& src_strides, const int64_t* index,
                         const std::vector<int64_t>& shape, int64_t dim, KernelStream stream);

/// Largest k supported by topk_rows (its sort runs in shared memory: 8 bytes per slot, k rounded up to 2^n).
constexpr int64_t kTopkMaxK = 16384;
/// For each row of x [outer, R] (f32 or bf16, contiguous): the k largest values in descending order (ties: lower
/// index first, NaN counts as the largest, −0 equals +0) and their i64 positions; values/indices are [outer, k].
/// 1 ≤ k ≤ min(R, kTopkMaxK).
void topk_rows(DType dtype, void* values, int64_t* indices, const void* x, int64_t outer, int64_t R, int64_t k,
               KernelStream stream);

}  // namespace vt::kernels::cuda
