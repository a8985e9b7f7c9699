// Device-side helpers for kernels over the float dtypes (f32, bf16, f64): the accumulation type of each (f32 for
// f32/bf16, f64 for f64), conversions to/from it (bf16 rounds to nearest even, as the host bf16), a 16-byte
// aligned vector type for packed loads/stores, a host dispatch from DType to the device type, and grid sizing.
// Includes nothing of the project outside this folder except core/dtype.h and core/error.h.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"

namespace vt::kernels::cuda::device {

template <typename T>
struct AccType {
  using type = float;
};
template <>
struct AccType<double> {
  using type = double;
};
template <typename T>
using acc_t = typename AccType<T>::type;

__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T, typename C>
__device__ __forceinline__ T from_acc(C v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(v));
  else return static_cast<T>(v);
}

/// V elements of T, aligned to their size (16 bytes for the packed paths).
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

inline bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

/// Calls f(T{}) with T the device type of a float dtype (float, double, __nv_bfloat16).
template <typename F>
void dispatch_float(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::bf16: return f(__nv_bfloat16{});
    default: VT_FAIL("[", op, "] CUDA kernel needs f32, bf16 or f64, got ", dtype_name(dtype));
  }
}

/// Calls f(T{}) with T = float or __nv_bfloat16, the dtypes most CUDA kernels take; other dtypes are an error.
template <typename F>
void dispatch_f32_bf16(DType dtype, const char* op, F&& f) {
  if (dtype == DType::f32) return f(float{});
  if (dtype == DType::bf16) return f(__nv_bfloat16{});
  VT_FAIL("[", op, "] CUDA kernel needs f32 or bf16, got ", dtype_name(dtype));
}

/// dispatch_f32_bf16 for two dtypes: f(A{}, B{}).
template <typename F>
void dispatch_f32_bf16_pair(DType a, DType b, const char* op, F&& f) {
  dispatch_f32_bf16(a, op, [&](auto ta) { dispatch_f32_bf16(b, op, [&](auto tb) { f(ta, tb); }); });
}

/// Calls f(std::integral_constant<int, D>{}) for the head dims the MiTA kernels instantiate (16, 32, 64, 128).
template <typename F>
void dispatch_head_dim(int64_t d, const char* op, F&& f) {
  switch (d) {
    case 16: return f(std::integral_constant<int, 16>{});
    case 32: return f(std::integral_constant<int, 32>{});
    case 64: return f(std::integral_constant<int, 64>{});
    case 128: return f(std::integral_constant<int, 128>{});
    default: VT_FAIL("[", op, "] CUDA kernels support head dims 16, 32, 64, 128, got ", d);
  }
}

/// Calls f(std::integral_constant<int, V>{}) with V = kWide when `wide` (every pointer and stride of the launch
/// aligned to a kWide-element vector), else V = 1: a kernel's vector width.
template <int kWide, typename F>
void dispatch_vector_width(bool wide, F&& f) {
  if (wide) f(std::integral_constant<int, kWide>{});
  else f(std::integral_constant<int, 1>{});
}

/// Multiprocessors of the current device (cached per device index, up to 16 devices).
inline int sm_count() {
  static int cached[16] = {};
  int dev = 0;
  cudaGetDevice(&dev);
  if (dev < 0 || dev >= 16) return 132;
  if (cached[dev] == 0) {
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
    cached[dev] = n;
  }
  return cached[dev];
}

/// Blocks that fill the current device for a memory-bound pass (8 per multiprocessor: 1,056 on an H200), the target
/// of the kernels that split a reduction into slices.
inline int64_t filling_blocks() { return int64_t(sm_count()) * 8; }

/// Blocks for a grid-stride loop over `work` items: enough to fill the device a few times over, no more.
inline int grid_for(int64_t work, int block) {
  const int64_t want = (work + block - 1) / block;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, int64_t(sm_count()) * 16)));
}

}  // namespace vt::kernels::cuda::device
