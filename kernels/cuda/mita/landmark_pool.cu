// Landmark pooling on the GPU (see landmark_pool.h).
// Forward: one block per (channel tile, landmark, batch); 32 lanes over channel groups (16-byte vectors when the
// strides allow) × 8 slices over the bin's tokens, so each warp reads whole rows of x; the slices' f32 partial sums
// are added in a fixed order through shared memory. Backward: one thread per (b, n, channel group) of dx gathers
// the ≤ 2 bins per axis that hold token n (more only when m exceeds the token count).
#include "kernels/cuda/mita/landmark_pool.h"

#include <cuda_bf16.h>

#include "core/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"

namespace vt::kernels::cuda {
namespace {

using device::from_acc;
using device::to_acc;
using device::Vec;

constexpr int kLanes = 32;  // channel groups per block
constexpr int kSlices = 8;  // token slices per block
constexpr int kBackwardBlock = 256;

// ---- kernels ----
// Bin arithmetic is templated on the index type: the backward runs it per output element, and 32-bit division is
// several times cheaper than 64-bit (used whenever (m + 1)·(L + 1) fits).
template <typename I>
__device__ __forceinline__ I bin_start(I i, I in, I out) {
  return (i * in) / out;
}
template <typename I>
__device__ __forceinline__ I bin_end(I i, I in, I out) {
  return ((i + 1) * in + out - 1) / out;
}

template <typename I>
struct Bin {
  I y0, y1, x0, x1, width;  // tokens: rows [y0, y1) × columns [x0, x1) of a grid `width` wide
};

template <typename I>
__device__ __forceinline__ Bin<I> bin_of(I j, I grid, I pool, I L, I m) {
  if (grid > 0) {
    const I r = j / pool, c = j % pool;
    return {bin_start(r, grid, pool), bin_end(r, grid, pool), bin_start(c, grid, pool), bin_end(c, grid, pool), grid};
  }
  return {0, 1, bin_start(j, L, m), bin_end(j, L, m), L};
}

// Bins of `out` over `in` that may hold position p: [lo, hi] (membership checked by the caller).
template <typename I>
__device__ __forceinline__ void candidate_bins(I p, I in, I out, I& lo, I& hi) {
  lo = max(I(0), (p * out) / in - 1);
  hi = min(out - 1, ((p + 1) * out) / in);
}

template <typename T, int V>
__global__ void __launch_bounds__(kLanes* kSlices)
    landmark_pool_fwd_kernel(T* __restrict__ out, const T* __restrict__ x, LandmarkPoolShape s) {
  __shared__ float partial[kSlices - 1][V][kLanes];
  const int64_t groups = s.C / V, g = int64_t(blockIdx.x) * kLanes + threadIdx.x;
  const int64_t j = blockIdx.y, b = blockIdx.z;
  const Bin<int64_t> bin = bin_of<int64_t>(j, s.grid, s.pool, s.L, s.m);
  const int64_t w = bin.x1 - bin.x0, count = (bin.y1 - bin.y0) * w;
  float acc[V] = {};
  if (g < groups) {
    const T* base = x + b * s.batch_stride + s.first * s.row_stride + g * V;
    for (int64_t i = threadIdx.y; i < count; i += kSlices) {
      const int64_t token = (bin.y0 + i / w) * bin.width + bin.x0 + i % w;
      const Vec<T, V> v = *reinterpret_cast<const Vec<T, V>*>(base + token * s.row_stride);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += to_acc(v.v[k]);
    }
  }
  if (threadIdx.y > 0) {
#pragma unroll
    for (int k = 0; k < V; ++k) partial[threadIdx.y - 1][k][threadIdx.x] = acc[k];
  }
  __syncthreads();
  if (threadIdx.y > 0 || g >= groups) return;
  const float inv = 1.0f / static_cast<float>(count);
  Vec<T, V> o;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float sum = acc[k];
#pragma unroll
    for (int sl = 0; sl < kSlices - 1; ++sl) sum += partial[sl][k][threadIdx.x];
    o.v[k] = from_acc<T>(sum * inv);
  }
  *reinterpret_cast<Vec<T, V>*>(out + (b * s.m + j) * s.C + g * V) = o;
}

template <typename T, int V, typename I>
__global__ void landmark_pool_bwd_kernel(T* __restrict__ dx, const T* __restrict__ dout, LandmarkPoolShape s,
                                         int64_t total) {
  const int64_t groups = s.C / V;
  const I grid = I(s.grid), pool = I(s.pool), L = I(s.L), m = I(s.m), cols = grid > 0 ? pool : m;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % groups, bn = i / groups, b = bn / s.N, tok = bn % s.N - s.first;
    float acc[V] = {};
    if (tok >= 0 && tok < s.L) {
      const I t = I(tok), y = grid > 0 ? t / grid : 0, xx = grid > 0 ? t % grid : t;
      I r0 = 0, r1 = 0, c0, c1;
      if (grid > 0) candidate_bins(y, grid, pool, r0, r1);
      candidate_bins(xx, grid > 0 ? grid : L, cols, c0, c1);
      for (I r = r0; r <= r1; ++r)
        for (I c = c0; c <= c1; ++c) {
          const Bin<I> bin = bin_of(r * cols + c, grid, pool, L, m);
          if (y < bin.y0 || y >= bin.y1 || xx < bin.x0 || xx >= bin.x1) continue;
          const float inv = 1.0f / static_cast<float>((bin.y1 - bin.y0) * (bin.x1 - bin.x0));
          const Vec<T, V> v =
              *reinterpret_cast<const Vec<T, V>*>(dout + (b * s.m + int64_t(r * cols + c)) * s.C + g * V);
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k] += to_acc(v.v[k]) * inv;
        }
    }
    Vec<T, V> o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = from_acc<T>(acc[k]);
    *reinterpret_cast<Vec<T, V>*>(dx + bn * s.C + g * V) = o;
  }
}

// 16-byte vectors when every row start is 16-byte aligned, else one element per thread.
template <typename T>
constexpr int kVec = 16 / sizeof(T);

template <typename T>
bool vectorizable(const void* a, const void* b, const LandmarkPoolShape& s, int64_t batch_stride, int64_t row_stride) {
  return s.C % kVec<T> == 0 && batch_stride % kVec<T> == 0 && row_stride % kVec<T> == 0 && device::aligned_to(a, 16) &&
         device::aligned_to(b, 16);
}

template <typename T, int V>
void launch_forward(T* out, const T* x, const LandmarkPoolShape& s, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((s.C / V + kLanes - 1) / kLanes), static_cast<unsigned>(s.m),
                  static_cast<unsigned>(s.B));
  landmark_pool_fwd_kernel<T, V><<<grid, dim3(kLanes, kSlices), 0, stream>>>(out, x, s);
}

template <typename T, int V>
void launch_backward(T* dx, const T* dout, const LandmarkPoolShape& s, cudaStream_t stream) {
  const int64_t total = s.B * s.N * (s.C / V);
  const int blocks = device::grid_for(total, kBackwardBlock);
  // The largest intermediate is below (m + 1)·(L + 1) (1-D; 2-D's (p + 1)·(G + 1) is smaller).
  if ((s.m + 1) * (s.L + 1) < (int64_t(1) << 31))
    landmark_pool_bwd_kernel<T, V, int32_t><<<blocks, kBackwardBlock, 0, stream>>>(dx, dout, s, total);
  else landmark_pool_bwd_kernel<T, V, int64_t><<<blocks, kBackwardBlock, 0, stream>>>(dx, dout, s, total);
}

void check_shape(const LandmarkPoolShape& s) {
  VT_ASSERT(s.m >= 1 && s.L >= 1 && s.first >= 0 && s.first + s.L <= s.N);
  VT_ASSERT(s.grid == 0 || (s.grid * s.grid == s.L && s.pool * s.pool == s.m));
}

}  // namespace

// ---- launchers ----
void landmark_pool_forward(DType dtype, void* out, const void* x, const LandmarkPoolShape& s, cudaStream_t stream) {
  check_shape(s);
  if (s.B == 0 || s.C == 0) return;
  VT_CHECK(s.m <= 65535 && s.B <= 65535, "[mita_landmark_pool] CUDA grid limit: m = ", s.m, ", B = ", s.B,
           " must be at most 65535");
  device::dispatch_f32_bf16(dtype, "mita_landmark_pool", [&](auto t) {
    using T = decltype(t);
    T* o = static_cast<T*>(out);
    const T* xi = static_cast<const T*>(x);
    if (vectorizable<T>(o, xi, s, s.batch_stride, s.row_stride)) launch_forward<T, kVec<T>>(o, xi, s, stream);
    else launch_forward<T, 1>(o, xi, s, stream);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void landmark_pool_backward(DType dtype, void* dx, const void* dout, const LandmarkPoolShape& s, cudaStream_t stream) {
  check_shape(s);
  if (s.B == 0 || s.N == 0 || s.C == 0) return;
  device::dispatch_f32_bf16(dtype, "mita_landmark_pool", [&](auto t) {
    using T = decltype(t);
    T* d = static_cast<T*>(dx);
    const T* g = static_cast<const T*>(dout);
    if (vectorizable<T>(d, g, s, s.C, s.C)) launch_backward<T, kVec<T>>(d, g, s, stream);
    else launch_backward<T, 1>(d, g, s, stream);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
