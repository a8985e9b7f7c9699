// cuBLASLt GEMM on raw device pointers, with the row-major semantics of kernels/cpu/gemm.h:
//   for b in [0, batch): C_b [M, N] = epilogue(alpha·op(A_b) [M, K]·op(B_b) [K, N] + beta·C_b (+ bias [N]))
// Operands are row-major with leading dimensions and batch strides in elements (stride 0 = shared by all items).
//
// Row-major -> column-major. cuBLASLt is column-major. A row-major [R, C] matrix with leading dimension ld is,
// byte for byte, the column-major [C, R] matrix with the same ld, i.e. its transpose. So we never move data: we
// ask cuBLASLt for C^T [N, M] = op(B)^T [N, K]·op(A)^T [K, M], passing B's memory as cuBLASLt's first operand
// and A's as its second, each with its own trans flag unchanged (a non-transposed row-major B [K, N] read as
// column-major is already op(B)^T [N, K]; a transposed one, stored [N, K], reads as [K, N] and needs OP_T).
// cuBLASLt's bias vector runs along the rows of its D (length N here), so it broadcasts over our rows, as a
// Linear layer's bias should.
//
// Dtypes: f32 in/out with CUBLAS_COMPUTE_32F (full f32, TF32 off); bf16 in with f32 or bf16 out, f32
// accumulation (CUBLAS_COMPUTE_32F). alpha/beta are f32. The bias has the output dtype.
//
// GELU: cuBLASLt's GELU epilogue is the tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), not the
// exact erf GELU of nn::GELU / timm's default, so it is exposed as `bias_gelu_tanh`. The exact GELU needs the
// separate kernel (kernels/cuda/elementwise.h) after a `bias` GEMM.
//
// Bias gradient: `bias_grad_a` also writes bias_grad [M] = Σ_k op(A)[m, k], which is db of a Linear layer when the
// GEMM is dW = gᵀ·x (A = g transposed): the plain GEMM, then kernels/cuda/bias_grad.h's row sums of op(A).
// `bias_grad_a_cublaslt` asks cuBLASLt's BGRADB epilogue instead (its B is our A; the same fallback where it has no
// kernel); on the H200 at DeiT shapes it was the slower of the two (BENCHMARKS.md, GemmBiasGradCuda.DISABLED_Timing)
// and is kept as that benchmark's peer.
//
// Algorithm choice (issue 11). The first GEMM of a key (shapes, layouts, dtypes, alignments, epilogue, beta != 0)
// asks cuBLASLt's heuristic for up to 8 candidates and times them on the real operands (one untimed run, then the
// fastest of three timed by CUDA events on args.stream; with beta != 0 into a scratch D, so C is only written by
// the real run). That first call therefore blocks the host until the timing runs are done: fine in warm-up steps.
// The winner is cached for the life of the process, so one process always computes a key the same way (every
// candidate is run-to-run deterministic; blas.cpp's `eligible` explains its reduction-scheme rule); two processes
// may pick different algorithms, hence round differently. No timing (the heuristic's first candidate, as before) when
// VT_GEMM_AUTOTUNE=0 (read for every new key; use it for bit-identical results across processes), when args.stream
// is capturing a CUDA graph, for bias_grad_a_cublaslt, or when fewer than two candidates qualify.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

enum class GemmEpilogue : uint8_t {
  none,                  // D = alpha·AB + beta·C (also the dgrad/wgrad case)
  bias,                  // D = alpha·AB + beta·C + bias
  bias_gelu_tanh,        // D = gelu_tanh(alpha·AB + beta·C + bias)
  bias_grad_a,           // D = alpha·AB + beta·C, and bias_grad [M] = Σ_k op(A)[m, k] (batch 1, alpha 1)
  bias_grad_a_cublaslt,  // the same by cuBLASLt's BGRADB epilogue
};

struct GemmLtOperand {
  const void* data = nullptr;
  bool trans = false;  // true: stored as the transpose of op(X) (row-major [K, M] for A, [N, K] for B)
  int64_t ld = 0;      // leading dimension of the stored row-major matrix (>= its column count)
  int64_t stride = 0;  // elements between batch items (0 = shared)
};

struct GemmLtArgs {
  DType in_dtype = DType::f32;   // A and B: f32 or bf16
  DType out_dtype = DType::f32;  // C (and bias): f32, or bf16 when in_dtype is bf16
  int64_t batch = 1, M = 0, N = 0, K = 0;
  float alpha = 1.0f;
  float beta = 0.0f;  // 0: C is write-only (may hold garbage, even NaN)
  GemmLtOperand A, B;
  void* C = nullptr;
  int64_t ldc = 0;
  int64_t stride_c = 0;
  GemmEpilogue epilogue = GemmEpilogue::none;
  const void* bias = nullptr;  // [N] of out_dtype, shared by all batch items; needed by bias epilogues
  void* bias_grad = nullptr;   // [M] of out_dtype, written by bias_grad_a
  KernelStream stream = nullptr;
};

/// Runs the GEMM on the current device, asynchronously on args.stream. Validates shapes, dtypes and leading
/// dimensions (vt::Error names "[gemm_lt]"); the algorithm is the fastest heuristic candidate, timed on the first
/// use of its shape/layout/alignment key (which waits for args.stream) and cached (see "Algorithm choice" above).
void gemm_lt(const GemmLtArgs& args);

/// Number of distinct algorithm-cache entries (all devices); for tests.
size_t gemm_lt_cache_size();
/// Number of algorithm-cache entries whose algorithm was chosen by timing (all devices); for tests and benchmarks.
size_t gemm_lt_autotuned_count();

}  // namespace vt::kernels::cuda
