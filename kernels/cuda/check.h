// Error checks for CUDA runtime calls: throw vt::Error with the decoded status and file:line.
#pragma once
#include <cuda_runtime.h>

#include "core/error.h"

#define VT_CUDA_CHECK(expr)                                                                        \
  do {                                                                                             \
    cudaError_t vt_status_ = (expr);                                                               \
    VT_CHECK(vt_status_ == cudaSuccess, "[cuda] ", #expr, " failed: ", cudaGetErrorString(vt_status_)); \
  } while (0)
