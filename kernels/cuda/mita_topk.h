// MiTA expert construction on the GPU: the k largest scores of every row of an f32 matrix (one row per landmark),
// as key indices in ascending order; ties go to the lower index (the CPU kernel's rule).
#pragma once
#include <cstdint>

#include <cuda_runtime.h>

namespace vt::kernels::cuda {

/// out [rows, k] = for each row of x [rows, N]: the indices of its k largest values, ascending. 1 ≤ k ≤ N.
void mita_topk_rows(const float* x, int32_t* out, int64_t rows, int N, int k, cudaStream_t stream);

}  // namespace vt::kernels::cuda
