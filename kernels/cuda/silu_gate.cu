// MiTA's gate (silu_gate.h): one thread per V consecutive columns of one row, V = 16 bytes' worth when every row of
// every operand starts on a 16-byte boundary, else 1; index arithmetic in 32 bits when the element count allows.
#include "kernels/cuda/silu_gate.h"

#include <cuda_bf16.h>

#include <cmath>
#include <initializer_list>
#include <type_traits>

#include "core/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"

namespace vt::kernels::cuda {
namespace {

using device::acc_t;
using device::from_acc;
using device::to_acc;
using device::Vec;

constexpr int kBlock = 256;

__device__ __forceinline__ float sigmoid(float g) { return 1.f / (1.f + expf(-g)); }
__device__ __forceinline__ double sigmoid(double g) { return 1.0 / (1.0 + ::exp(-g)); }

template <typename T, int V, typename I>
__global__ void silu_gate_fwd_kernel(T* y, const T* x, int64_t xs, const T* g, int64_t gs, I rows, I chunks) {
  using A = acc_t<T>;
  const I total = rows * chunks;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    const I r = i / chunks, c = (i - r * chunks) * V;
    const Vec<T, V> xv = *reinterpret_cast<const Vec<T, V>*>(x + r * xs + c);
    const Vec<T, V> gv = *reinterpret_cast<const Vec<T, V>*>(g + r * gs + c);
    Vec<T, V> o;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const A gg = to_acc(gv.v[e]);
      o.v[e] = from_acc<T>(to_acc(xv.v[e]) * gg * sigmoid(gg));
    }
    *reinterpret_cast<Vec<T, V>*>(y + r * chunks * V + c) = o;
  }
}

template <typename T, int V, typename I>
__global__ void silu_gate_bwd_kernel(T* dx, T* dg, const T* dy, const T* x, int64_t xs, const T* g, int64_t gs, I rows,
                                     I chunks) {
  using A = acc_t<T>;
  const I total = rows * chunks;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    const I r = i / chunks, c = (i - r * chunks) * V, at = r * chunks * V + c;
    const Vec<T, V> dv = *reinterpret_cast<const Vec<T, V>*>(dy + at);
    const Vec<T, V> xv = *reinterpret_cast<const Vec<T, V>*>(x + r * xs + c);
    const Vec<T, V> gv = *reinterpret_cast<const Vec<T, V>*>(g + r * gs + c);
    Vec<T, V> ox, og;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const A gg = to_acc(gv.v[e]), d = to_acc(dv.v[e]), s = sigmoid(gg);
      ox.v[e] = from_acc<T>(d * gg * s);
      og.v[e] = from_acc<T>(d * to_acc(xv.v[e]) * s * (A(1) + gg * (A(1) - s)));
    }
    *reinterpret_cast<Vec<T, V>*>(dx + at) = ox;
    *reinterpret_cast<Vec<T, V>*>(dg + at) = og;
  }
}

// Runs launch(T{}, V, I) with the widest V every pointer and row stride allows and the narrowest index type.
template <typename F>
void dispatch_gate(DType dtype, const char* op, std::initializer_list<const void*> ptrs,
                   std::initializer_list<int64_t> strides, int64_t rows, int64_t cols, F&& launch) {
  device::dispatch_float(dtype, op, [&](auto t) {
    using T = decltype(t);
    constexpr int kWide = 16 / sizeof(T);
    bool wide = cols % kWide == 0;
    for (const void* p : ptrs) wide = wide && device::aligned_to(p, 16);
    for (int64_t s : strides) wide = wide && s % kWide == 0;
    device::dispatch_vector_width<kWide>(wide, [&](auto vec) {
      if (rows * cols < (int64_t{1} << 31)) launch(t, vec, int32_t{});  // element offsets fit in 32 bits
      else launch(t, vec, int64_t{});
    });
  });
}

}  // namespace

void silu_gate_forward(DType dtype, void* y, const void* x, int64_t x_stride, const void* g, int64_t g_stride,
                       int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  dispatch_gate(dtype, "silu_gate", {y, x, g}, {x_stride, g_stride}, rows, cols, [&](auto t, auto vec, auto index) {
    using T = decltype(t);
    using I = decltype(index);
    constexpr int V = decltype(vec)::value;
    const I n_rows = static_cast<I>(rows), chunks = static_cast<I>(cols / V);
    silu_gate_fwd_kernel<T, V, I><<<device::grid_for(rows * (cols / V), kBlock), kBlock, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(x), x_stride, static_cast<const T*>(g), g_stride, n_rows, chunks);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void silu_gate_backward(DType dtype, void* dx, void* dg, const void* dy, const void* x, int64_t x_stride, const void* g,
                        int64_t g_stride, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  dispatch_gate(dtype, "silu_gate_backward", {dx, dg, dy, x, g}, {x_stride, g_stride}, rows, cols,
                [&](auto t, auto vec, auto index) {
                  using T = decltype(t);
                  using I = decltype(index);
                  constexpr int V = decltype(vec)::value;
                  const I n_rows = static_cast<I>(rows), chunks = static_cast<I>(cols / V);
                  silu_gate_bwd_kernel<T, V, I><<<device::grid_for(rows * (cols / V), kBlock), kBlock, 0, stream>>>(
                      static_cast<T*>(dx), static_cast<T*>(dg), static_cast<const T*>(dy), static_cast<const T*>(x),
                      x_stride, static_cast<const T*>(g), g_stride, n_rows, chunks);
                });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
