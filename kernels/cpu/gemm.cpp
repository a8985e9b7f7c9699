#include "kernels/cpu/gemm.h"

#include <cblas.h>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t M, int64_t N, int64_t K, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t M, int64_t N, int64_t K, double alpha, const double* a,
               int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}
}  // namespace

void gemm_batched(DType dtype, int64_t batch, int64_t M, int64_t N, int64_t K, double alpha, GemmOperand A,
                  GemmOperand B, double beta, void* C, int64_t ldc, int64_t stride_c) {
  const auto ta = A.trans ? CblasTrans : CblasNoTrans;
  const auto tb = B.trans ? CblasTrans : CblasNoTrans;
  if (M == 0 || N == 0) return;
  VT_DISPATCH_FLOAT(dtype, "gemm", [&] {
    using T = scalar_t;
    for (int64_t b = 0; b < batch; ++b) {
      const T* a = static_cast<const T*>(A.data) + b * A.stride;
      const T* bb = static_cast<const T*>(B.data) + b * B.stride;
      T* c = static_cast<T*>(C) + b * stride_c;
      blas_gemm(ta, tb, M, N, K, static_cast<T>(alpha), a, A.ld, bb, B.ld, static_cast<T>(beta), c, ldc);
    }
  });
}

}  // namespace vt::kernels::cpu
