// Strided copy with dtype conversion: the kernel behind contiguous(), to(dtype) and copy_().
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace vt::kernels::cpu {

void copy_strided(void* dst, DType dst_dtype, const std::vector<int64_t>& dst_strides, const void* src, DType src_dtype,
                  const std::vector<int64_t>& src_strides, const std::vector<int64_t>& shape);

void fill(void* dst, DType dtype, int64_t n, double value);

}  // namespace vt::kernels::cpu
