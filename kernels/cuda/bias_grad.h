// Row sums of a strided matrix on the device: the bias gradient of a Linear / patch conv when cuBLASLt's fused
// BGRADB epilogue is not available (or no weight gradient is wanted).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// out[m] = Σ_k in[m·stride_m + k·stride_k] for m < M, k < K; in and out f32 or bf16, f32 accumulation.
/// Column sums of a row-major [K, M] matrix are stride_m = 1, stride_k = ld (the coalesced case).
void sum_rows_strided(void* out, DType out_dtype, const void* in, DType in_dtype, int64_t M, int64_t K,
                      int64_t stride_m, int64_t stride_k, KernelStream stream);

}  // namespace vt::kernels::cuda
