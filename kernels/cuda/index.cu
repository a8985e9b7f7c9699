// CUDA indexing kernels (see index.h). Copies move elements as unsigned integers of the dtype's size, so one
// instantiation serves every dtype of that size. Top-k is one block per row: a 4-pass radix select (8 bits per pass)
// finds the k-th largest order key, one more pass collects the elements above it plus the lowest-index ties, and a
// bitonic sort in shared memory orders the k survivors by (value desc, index asc).
#include "kernels/cuda/index.h"

#include <algorithm>

#include <cub/block/block_scan.cuh>
#include <cuda_bf16.h>

#include "core/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"

namespace vt::kernels::cuda {
namespace {

constexpr int kBlock = 256;
constexpr int kMaxDims = 8;

int grid_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + kBlock - 1) / kBlock, 1 << 20)); }

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

struct Dims {
  int ndim;
  int64_t shape[kMaxDims];
  int64_t a[kMaxDims];  // strides of the first strided operand
  int64_t b[kMaxDims];  // strides of the second (unused by gather)
};

Dims make_dims(const std::vector<int64_t>& shape, const std::vector<int64_t>& a, const std::vector<int64_t>& b,
               const char* op) {
  VT_CHECK(shape.size() <= size_t(kMaxDims), "[", op, "] at most ", kMaxDims, " dims on CUDA, got ", shape.size());
  Dims d{};
  d.ndim = static_cast<int>(shape.size());
  for (int i = 0; i < d.ndim; ++i) {
    d.shape[i] = shape[i];
    d.a[i] = a[i];
    d.b[i] = b.empty() ? 0 : b[i];
  }
  return d;
}

// ---- index_select / index_add ----
template <typename T>
__global__ void index_select_kernel(T* out, const T* x, const int64_t* idx, int64_t n, int64_t k, int64_t inner,
                                    int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i % inner, j = (i / inner) % k, o = i / (inner * k);
    const int64_t row = idx[j];
    out[i] = row >= 0 && row < n ? x[(o * n + row) * inner + r] : T(0);
  }
}

template <typename S>
__global__ void index_add_kernel(float* out, const S* src, const int64_t* idx, int64_t n, int64_t k, int64_t inner,
                                 int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i % inner, j = (i / inner) % k, o = i / (inner * k);
    const int64_t row = idx[j];
    if (row >= 0 && row < n) atomicAdd(out + (o * n + row) * inner + r, to_float(src[i]));
  }
}

// ---- gather / scatter_add ----
template <typename T>
__global__ void gather_kernel(T* out, const T* x, Dims d, int64_t bound, const int64_t* index, int dim, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = index[i];
    int64_t rem = i, off = 0;
#pragma unroll
    for (int a = kMaxDims - 1; a >= 0; --a) {
      if (a >= d.ndim) continue;
      const int64_t c = rem % d.shape[a];
      rem /= d.shape[a];
      off += (a == dim ? at : c) * d.a[a];
    }
    out[i] = at >= 0 && at < bound ? x[off] : T(0);
  }
}

template <typename S>
__global__ void scatter_add_kernel(float* out, const S* src, Dims d, int64_t bound, const int64_t* index, int dim,
                                   int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = index[i];
    if (at < 0 || at >= bound) continue;
    int64_t rem = i, o = 0, s = 0;
#pragma unroll
    for (int a = kMaxDims - 1; a >= 0; --a) {
      if (a >= d.ndim) continue;
      const int64_t c = rem % d.shape[a];
      rem /= d.shape[a];
      o += (a == dim ? at : c) * d.a[a];
      s += c * d.b[a];
    }
    atomicAdd(out + o, to_float(src[s]));
  }
}

// Calls f with the unsigned type of the dtype's size (copies only move bits).
template <typename F>
void by_size(DType dtype, const char* op, F&& f) {
  switch (dtype_size(dtype)) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: VT_FAIL("[", op, "] unsupported dtype ", dtype_name(dtype));
  }
}

// ---- top-k ----
// Order key: unsigned compare of keys = the CPU's order of values (NaN largest and all NaNs equal, −0 == +0).
__device__ __forceinline__ uint32_t order_key(float f) {
  if (isnan(f)) return 0xffffffffu;
  if (f == 0.0f) f = 0.0f;
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Sorting descending by this puts larger keys first and, among equal keys, lower positions first.
__device__ __forceinline__ uint64_t sort_key(uint32_t key, int64_t pos) {
  return (uint64_t(key) << 32) | uint64_t(0xffffffffu - uint32_t(pos));
}

template <typename T>
__global__ void topk_kernel(T* values, int64_t* indices, const T* x, int64_t R, int k, int padded) {
  extern __shared__ uint64_t sel[];  // [padded]
  __shared__ int hist[256];
  __shared__ uint32_t s_desired;
  __shared__ int s_take, s_gt, s_eq;
  using Scan = cub::BlockScan<int, kBlock>;
  __shared__ typename Scan::TempStorage scan_tmp;

  const T* row = x + blockIdx.x * R;
  const int tid = threadIdx.x;

  // Radix select: after the 4 passes, `desired` is the k-th largest key and `take` how many of its ties to keep.
  uint32_t desired = 0, mask = 0;
  int take = k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = tid; b < 256; b += kBlock) hist[b] = 0;
    __syncthreads();
    for (int64_t i = tid; i < R; i += kBlock) {
      const uint32_t key = order_key(to_float(row[i]));
      if ((key & mask) == desired) atomicAdd(&hist[(key >> shift) & 255u], 1);
    }
    __syncthreads();
    if (tid == 0) {
      int above = 0;
      for (int b = 255; b >= 0; --b) {
        if (above + hist[b] >= take) {
          s_desired = desired | (uint32_t(b) << shift);
          s_take = take - above;
          break;
        }
        above += hist[b];
      }
    }
    __syncthreads();
    desired = s_desired;
    take = s_take;
    mask |= 255u << shift;
  }

  // Collect: keys above the threshold anywhere in [0, k − take); the first `take` ties in [k − take, k).
  for (int i = tid; i < padded; i += kBlock) sel[i] = 0;  // 0 sorts after every real entry
  if (tid == 0) s_gt = 0, s_eq = 0;
  __syncthreads();
  for (int64_t base = 0; base < R; base += kBlock) {
    const int64_t i = base + tid;
    const uint32_t key = i < R ? order_key(to_float(row[i])) : 0u;
    const bool gt = i < R && key > desired, eq = i < R && key == desired;
    if (gt) sel[atomicAdd(&s_gt, 1)] = sort_key(key, i);
    int rank = 0, total = 0;
    Scan(scan_tmp).ExclusiveSum(eq ? 1 : 0, rank, total);
    if (eq && s_eq + rank < take) sel[k - take + s_eq + rank] = sort_key(key, i);
    __syncthreads();
    if (tid == 0) s_eq += total;
    __syncthreads();
  }

  // Bitonic sort of sel[0, padded) into descending order.
  for (int size = 2; size <= padded; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = tid; t < padded / 2; t += kBlock) {
        const int i = 2 * stride * (t / stride) + t % stride, j = i + stride;
        const bool descending = (i & size) == 0;
        const uint64_t a = sel[i], b = sel[j];
        if ((a < b) == descending) sel[i] = b, sel[j] = a;
      }
      __syncthreads();
    }

  const int64_t out_row = int64_t(blockIdx.x) * k;
  for (int j = tid; j < k; j += kBlock) {
    const int64_t pos = int64_t(0xffffffffu - uint32_t(sel[j] & 0xffffffffu));
    indices[out_row + j] = pos;
    values[out_row + j] = row[pos];
  }
}

}  // namespace

void index_select_rows(DType dtype, void* out, const void* x, const int64_t* idx, int64_t outer, int64_t n, int64_t k,
                       int64_t inner, cudaStream_t stream) {
  const int64_t total = outer * k * inner;
  if (total == 0) return;
  by_size(dtype, "index_select", [&](auto t) {
    using T = decltype(t);
    index_select_kernel<T><<<grid_for(total), kBlock, 0, stream>>>(static_cast<T*>(out), static_cast<const T*>(x), idx,
                                                                   n, k, inner, total);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void index_add_rows(float* out, const void* src, DType src_dtype, const int64_t* idx, int64_t outer, int64_t n,
                    int64_t k, int64_t inner, cudaStream_t stream) {
  const int64_t total = outer * k * inner;
  if (total == 0) return;
  device::dispatch_f32_bf16(src_dtype, "index_add", [&](auto t) {
    using S = decltype(t);
    index_add_kernel<S>
        <<<grid_for(total), kBlock, 0, stream>>>(out, static_cast<const S*>(src), idx, n, k, inner, total);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void gather_strided(DType dtype, void* out, const void* x, const std::vector<int64_t>& x_strides, int64_t bound,
                    const int64_t* index, const std::vector<int64_t>& shape, int64_t dim, cudaStream_t stream) {
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  if (total == 0) return;
  const Dims d = make_dims(shape, x_strides, {}, "gather");
  by_size(dtype, "gather", [&](auto t) {
    using T = decltype(t);
    gather_kernel<T><<<grid_for(total), kBlock, 0, stream>>>(static_cast<T*>(out), static_cast<const T*>(x), d, bound,
                                                             index, static_cast<int>(dim), total);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void scatter_add_strided(float* out, const std::vector<int64_t>& out_strides, int64_t bound, const void* src,
                         DType src_dtype, const std::vector<int64_t>& src_strides, const int64_t* index,
                         const std::vector<int64_t>& shape, int64_t dim, cudaStream_t stream) {
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  if (total == 0) return;
  const Dims d = make_dims(shape, out_strides, src_strides, "scatter_add");
  device::dispatch_f32_bf16(src_dtype, "scatter_add", [&](auto t) {
    using S = decltype(t);
    scatter_add_kernel<S><<<grid_for(total), kBlock, 0, stream>>>(out, static_cast<const S*>(src), d, bound, index,
                                                                  static_cast<int>(dim), total);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void topk_rows(DType dtype, void* values, int64_t* indices, const void* x, int64_t outer, int64_t R, int64_t k,
               cudaStream_t stream) {
  VT_CHECK(k >= 1 && k <= R && k <= kTopkMaxK, "[topk] k = ", k, " must be in [1, min(", R, ", ", kTopkMaxK,
           ")] on CUDA");
  VT_CHECK(R < (int64_t(1) << 32) - 1, "[topk] rows of ", R, " elements are too long for the CUDA kernel");
  if (outer == 0) return;
  int padded = 1;
  while (padded < k) padded <<= 1;
  padded = std::max(padded, 2);
  const size_t shmem = size_t(padded) * sizeof(uint64_t);
  device::dispatch_f32_bf16(dtype, "topk", [&](auto t) {
    using T = decltype(t);
    if (shmem > (size_t(48) << 10))  // above the default limit: opt in (H100/H200 allow 227 KiB per block)
      VT_CUDA_CHECK(
          cudaFuncSetAttribute(topk_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shmem)));
    topk_kernel<T><<<static_cast<unsigned>(outer), kBlock, shmem, stream>>>(
        static_cast<T*>(values), indices, static_cast<const T*>(x), R, static_cast<int>(k), padded);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
