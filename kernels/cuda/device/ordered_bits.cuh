// Float bits mapped so that unsigned order is float order, the key of MiTA's top-k selection (radix passes and
// thresholds work on these). NaN with the sign bit clear sorts above +inf.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace vt::kernels::cuda::device {

__device__ __forceinline__ uint32_t ordered_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

}  // namespace vt::kernels::cuda::device
