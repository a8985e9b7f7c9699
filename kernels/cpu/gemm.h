// GEMM on OpenBLAS: C = alpha·op(A)·op(B) + beta·C, row-major, for f32 and f64, batched by fixed strides.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

struct GemmOperand {
  const void* data;
  bool trans;      // true: stored as the transpose (column-major view of op(X))
  int64_t ld;      // leading dimension of the stored matrix
  int64_t stride;  // elements between batch items (0 = shared)
};

/// For b in [0, batch): C_b [M, N] = alpha·op(A_b) [M, K]·op(B_b) [K, N] + beta·C_b; C is row-major with ldc.
void gemm_batched(DType dtype, int64_t batch, int64_t M, int64_t N, int64_t K, double alpha, GemmOperand A,
                  GemmOperand B, double beta, void* C, int64_t ldc, int64_t stride_c);

}  // namespace vt::kernels::cpu
