// Error checks for CUDA runtime, cuBLAS, cuDNN and NCCL calls: throw vt::Error with the library, the call, the
// decoded status and file:line. One generator macro builds them all, so the messages share one format.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "core/error.h"

// VT_GPU_STATUS_CHECK("lib", expr, status type, success value, status -> const char*)
#define VT_GPU_STATUS_CHECK(lib, expr, status_t, ok, decode)                                        \
  do {                                                                                              \
    status_t vt_status_ = (expr);                                                                   \
    VT_CHECK(vt_status_ == (ok), "[" lib "] ", #expr, " failed: ", decode(vt_status_), " (status ", \
             static_cast<int>(vt_status_), ")");                                                    \
  } while (0)

#define VT_CUDA_CHECK(expr) VT_GPU_STATUS_CHECK("cuda", expr, cudaError_t, cudaSuccess, cudaGetErrorString)
#define VT_CUBLAS_CHECK(expr) \
  VT_GPU_STATUS_CHECK("cublas", expr, cublasStatus_t, CUBLAS_STATUS_SUCCESS, cublasGetStatusString)
#define VT_CUDNN_CHECK(expr) \
  VT_GPU_STATUS_CHECK("cudnn", expr, cudnnStatus_t, CUDNN_STATUS_SUCCESS, cudnnGetErrorString)
#define VT_NCCL_CHECK(expr) VT_GPU_STATUS_CHECK("nccl", expr, ncclResult_t, ncclSuccess, ncclGetErrorString)
