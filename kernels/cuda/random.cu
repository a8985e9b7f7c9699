// Random fills and dropout on CUDA from the Philox counters of core/rng.h. The fills call the same rng::
// functions as the CPU kernels, one element per thread; the f64 arithmetic around them uses __dmul_rn/__dadd_rn
// because nvcc would otherwise contract it into an fma, which the CPU build (x86-64-v2, no FMA) never does.
// Dropout takes the four lanes of one Philox call for four consecutive elements (element i uses counter
// offset + i/4, lane i%4, exactly as rng::bits_at). Dropout and masked_scale move aligned data in 4-element or
// 16-byte packs, with a scalar fallback for odd sizes or unaligned views.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

#include "core/rng.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/random.h"

namespace vt::kernels::cuda {

namespace {

// ---- kernels ----

// A double stored as T the way the CPU does it: f32 directly, bf16 through an f32 temporary (round-to-nearest-even
// twice, as fill_tensor's f32 temporary followed by the f32 -> bf16 copy).
template <typename T>
__device__ __forceinline__ T store_as(double v);
template <>
__device__ __forceinline__ float store_as<float>(double v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ double store_as<double>(double v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 store_as<__nv_bfloat16>(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

// Element arithmetic of masked_scale: f32 for f32/bf16 (as the CPU's T·T for f32), f64 for f64.
__device__ __forceinline__ float scaled(float x, float s) { return x * s; }
__device__ __forceinline__ double scaled(double x, double s) { return x * s; }
__device__ __forceinline__ __nv_bfloat16 scaled(__nv_bfloat16 x, float s) {
  return __float2bfloat16_rn(__bfloat162float(x) * s);
}
template <typename T>
using scale_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// rng::uniform_at's mapping of 32 random bits to (0, 1).
__device__ __forceinline__ float uniform_from_bits(uint32_t bits) {
  const float u = (static_cast<float>(bits >> 8) + 0.5f) * (1.0f / 16777216.0f);
  return u < 1.0f ? u : 0.99999994f;
}

#define VT_GRID_STRIDE(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

template <typename T>
__global__ void uniform_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double lo, double span) {
  VT_GRID_STRIDE(i, n) {
    out[i] = store_as<T>(__dadd_rn(lo, __dmul_rn(span, static_cast<double>(rng::uniform_at(seed, offset, i)))));
  }
}

template <typename T>
__global__ void normal_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std) {
  VT_GRID_STRIDE(i, n) {
    out[i] = store_as<T>(__dadd_rn(mean, __dmul_rn(std, static_cast<double>(rng::normal_at(seed, offset, i)))));
  }
}

template <typename T>
__global__ void trunc_normal_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std,
                                    double a, double b) {
  VT_GRID_STRIDE(i, n) { out[i] = store_as<T>(rng::trunc_normal_at(seed, offset, i, mean, std, a, b)); }
}

__global__ void bernoulli_kernel(uint8_t* out, int64_t n, uint64_t seed, uint64_t offset, const uint64_t* shift,
                                 double p) {
  if (shift) offset += *shift;
  VT_GRID_STRIDE(i, n) { out[i] = static_cast<double>(rng::uniform_at(seed, offset, i)) < p ? 1 : 0; }
}

// N consecutive elements moved with one load/store (16 bytes for 4 f32 or 8 bf16; 8 bytes for 4 bf16).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T e[N];
};

// Element-wise dropout (inner = 1): thread g handles elements 4g..4g+3 from one Philox call. kVec: n % 4 == 0 and
// x, y, mask aligned for one 4-element load/store each.
template <typename T, bool kVec>
__global__ void dropout_kernel(T* y, uint8_t* mask, const T* x, int64_t n, uint64_t seed, uint64_t offset,
                               const uint64_t* shift, double keep_prob, scale_t<T> scale) {
  if (shift) offset += *shift;
  const int64_t groups = (n + 3) / 4;
  VT_GRID_STRIDE(g, groups) {
    const rng::U32x4 r = rng::philox4x32(seed, offset + static_cast<uint64_t>(g));
    if constexpr (kVec) {
      Vec<T, 4> v = reinterpret_cast<const Vec<T, 4>*>(x)[g];
      Vec<uint8_t, 4> m;
#pragma unroll
      for (int lane = 0; lane < 4; ++lane) {
        const bool keep = static_cast<double>(uniform_from_bits(r.v[lane])) < keep_prob;
        m.e[lane] = keep ? 1 : 0;
        v.e[lane] = scaled(v.e[lane], keep ? scale : scale_t<T>(0));
      }
      reinterpret_cast<Vec<T, 4>*>(y)[g] = v;
      reinterpret_cast<Vec<uint8_t, 4>*>(mask)[g] = m;
    } else {
#pragma unroll
      for (int lane = 0; lane < 4; ++lane) {
        const int64_t i = 4 * g + lane;
        if (i >= n) break;
        const bool keep = static_cast<double>(uniform_from_bits(r.v[lane])) < keep_prob;
        mask[i] = keep ? 1 : 0;
        y[i] = scaled(x[i], keep ? scale : scale_t<T>(0));
      }
    }
  }
}

template <typename T>
__global__ void masked_scale_kernel(T* out, const T* in, const uint8_t* mask, int64_t rows, int64_t inner,
                                    scale_t<T> scale) {
  VT_GRID_STRIDE(i, rows * inner) { out[i] = scaled(in[i], mask[i / inner] ? scale : scale_t<T>(0)); }
}

// masked_scale on 16-byte packs of V elements: with inner == 1 each element has its own mask byte; otherwise
// inner % V == 0, so a pack lies in one row and needs one mask byte (and one division).
template <typename T>
__global__ void masked_scale_vec_kernel(T* out, const T* in, const uint8_t* mask, int64_t packs, int64_t inner,
                                        scale_t<T> scale) {
  constexpr int V = 16 / sizeof(T);
  using P = Vec<T, V>;
  VT_GRID_STRIDE(p, packs) {
    P v = reinterpret_cast<const P*>(in)[p];
    if (inner == 1) {
#pragma unroll
      for (int k = 0; k < V; ++k) v.e[k] = scaled(v.e[k], mask[p * V + k] ? scale : scale_t<T>(0));
    } else {
      const scale_t<T> s = mask[p * V / inner] ? scale : scale_t<T>(0);
#pragma unroll
      for (int k = 0; k < V; ++k) v.e[k] = scaled(v.e[k], s);
    }
    reinterpret_cast<P*>(out)[p] = v;
  }
}

#undef VT_GRID_STRIDE

// ---- launchers ----

template <typename F>
void dispatch(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::f32: f(float{}); break;
    case DType::f64: f(double{}); break;
    case DType::bf16: f(__nv_bfloat16{}); break;
    default: VT_FAIL("[", op, "] CUDA kernel needs f32, f64 or bf16, got ", dtype_name(dtype));
  }
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

constexpr int kThreads = 256;
int grid_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 132 * 32)); }

}  // namespace

void uniform_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double lo, double hi,
                  cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dtype, "uniform_", [&](auto tag) {
    using T = decltype(tag);
    uniform_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), n, seed, offset, lo, hi - lo);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void normal_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std,
                 cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dtype, "normal_", [&](auto tag) {
    using T = decltype(tag);
    normal_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), n, seed, offset, mean, std);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void trunc_normal_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std,
                       double a, double b, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dtype, "trunc_normal_", [&](auto tag) {
    using T = decltype(tag);
    trunc_normal_kernel<T>
        <<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), n, seed, offset, mean, std, a, b);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void bernoulli_fill(uint8_t* out, int64_t n, uint64_t seed, uint64_t offset, const uint64_t* offset_shift, double p,
                    cudaStream_t stream) {
  if (n == 0) return;
  bernoulli_kernel<<<grid_for(n), kThreads, 0, stream>>>(out, n, seed, offset, offset_shift, p);
  VT_CUDA_CHECK(cudaGetLastError());
}

void dropout_forward(DType dtype, void* y, uint8_t* mask, const void* x, int64_t rows, int64_t inner, uint64_t seed,
                     uint64_t offset, const uint64_t* offset_shift, double keep_prob, double scale,
                     cudaStream_t stream) {
  if (rows == 0) return;
  if (inner != 1) {  // drop_path: few rows, so draw the row mask first, then scale the rows
    bernoulli_fill(mask, rows, seed, offset, offset_shift, keep_prob, stream);
    masked_scale(dtype, y, x, mask, rows, inner, scale, stream);
    return;
  }
  dispatch(dtype, "dropout", [&](auto tag) {
    using T = decltype(tag);
    const bool vec = rows % 4 == 0 && aligned(x, 4 * sizeof(T)) && aligned(y, 4 * sizeof(T)) && aligned(mask, 4);
    auto kernel = vec ? dropout_kernel<T, true> : dropout_kernel<T, false>;
    kernel<<<grid_for((rows + 3) / 4), kThreads, 0, stream>>>(static_cast<T*>(y), mask, static_cast<const T*>(x), rows,
                                                              seed, offset, offset_shift, keep_prob,
                                                              static_cast<scale_t<T>>(scale));
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void masked_scale(DType dtype, void* out, const void* in, const uint8_t* mask, int64_t rows, int64_t inner,
                  double scale, cudaStream_t stream) {
  if (rows * inner == 0) return;
  dispatch(dtype, "masked_scale", [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = 16 / sizeof(T);
    const int64_t n = rows * inner;
    const bool vec = (inner == 1 || inner % V == 0) && n % V == 0 && aligned(out, 16) && aligned(in, 16);
    if (vec)
      masked_scale_vec_kernel<T><<<grid_for(n / V), kThreads, 0, stream>>>(
          static_cast<T*>(out), static_cast<const T*>(in), mask, n / V, inner, static_cast<scale_t<T>>(scale));
    else
      masked_scale_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), static_cast<const T*>(in),
                                                                   mask, rows, inner, static_cast<scale_t<T>>(scale));
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
