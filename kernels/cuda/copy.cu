// CUDA strided copy with dtype conversion, fill and transfers (see copy.h). The copy kernel walks the logical
// index space with a grid-stride loop and maps each linear index to the two operands' offsets by div/mod over at
// most 8 (merged) dims, in 32-bit arithmetic when the offsets fit and over 16-byte vectors when a same-dtype copy
// has contiguous, aligned rows; a contiguous-to-contiguous copy takes a plain loop (cudaMemcpyAsync without a
// conversion). Conversions mirror
// kernels/cpu/copy.cpp exactly (static_cast, bf16 through f32 with round-to-nearest-even and NaN kept quiet), so a
// device conversion is bit-identical to the host one.
#include "kernels/cuda/copy.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include <cuda_runtime.h>

#include "kernels/strided.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/pinned_memory.h"
#include "kernels/cuda/stream.h"

namespace vt::kernels::cuda {
namespace {

constexpr int kMaxDims = 8;
constexpr int kBlock = 256;

struct Bf16 {
  uint16_t bits;
};

__device__ __forceinline__ float bf16_to_float(Bf16 v) { return __uint_as_float(static_cast<uint32_t>(v.bits) << 16); }

__device__ __forceinline__ Bf16 float_to_bf16(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return Bf16{static_cast<uint16_t>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return Bf16{static_cast<uint16_t>(u >> 16)};
}

template <typename D, typename S>
__device__ __forceinline__ D convert(S v) {
  if constexpr (std::is_same_v<D, Bf16> && std::is_same_v<S, Bf16>) return float_to_bf16(bf16_to_float(v));
  else if constexpr (std::is_same_v<D, Bf16>) return float_to_bf16(static_cast<float>(v));
  else if constexpr (std::is_same_v<S, Bf16>) return static_cast<D>(bf16_to_float(v));
  else return static_cast<D>(v);
}

struct Geometry {
  int ndim;
  int64_t shape[kMaxDims];
  int64_t dst[kMaxDims];
  int64_t src[kMaxDims];
};

template <typename D, typename S>
__global__ void copy_contiguous_kernel(D* __restrict__ dst, const S* __restrict__ src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = convert<D>(src[i]);
}

// Four consecutive values loaded and stored as one aligned access (a dtype conversion over contiguous buffers).
template <typename T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};

template <typename D, typename S>
__global__ void copy_contiguous4_kernel(Four<D>* __restrict__ dst, const Four<S>* __restrict__ src, int64_t n4) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4; i += int64_t(gridDim.x) * blockDim.x) {
    const Four<S> a = src[i];
    Four<D> b;
#pragma unroll
    for (int k = 0; k < 4; ++k) b.v[k] = convert<D>(a.v[k]);
    dst[i] = b;
  }
}

// I: the index type. 32-bit when every index and offset fits: the div/mod per dim is then a few instructions
// instead of the ~70 of a 64-bit division, which made this kernel run at ~400 GB/s.
template <typename D, typename S, typename I>
__global__ void copy_strided_kernel(D* dst, const S* src, Geometry g, I n) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I rem = i, od = 0, os = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d >= g.ndim) continue;
      const I size = static_cast<I>(g.shape[d]);
      const I idx = rem % size;
      rem /= size;
      od += idx * static_cast<I>(g.dst[d]);
      os += idx * static_cast<I>(g.src[d]);
    }
    dst[od] = convert<D>(src[os]);
  }
}

// 16 bytes moved as one value: a same-dtype copy whose rows are contiguous runs over uint4 elements.
struct Vec16 {
  uint4 v;
};

template <typename T>
__global__ void fill_kernel(T* dst, T value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = value;
}

// dst[i] = i, converted from the double as the CPU's arange converts it.
template <typename T>
__global__ void iota_kernel(T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = convert<T>(static_cast<double>(i));
}

int grid_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + kBlock - 1) / kBlock, 65536)); }

// Calls f(T{}) with T the device storage type of `dtype`.
template <typename F>
void dispatch(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f64: return f(double{});
    case DType::f32: return f(float{});
    case DType::bf16: return f(Bf16{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::u8: return f(uint8_t{});
  }
  VT_FAIL("[cuda_copy] unknown dtype");
}

}  // namespace

int device_count() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

void check_device(int device, const char* op) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) cudaGetLastError();
  VT_CHECK(status == cudaSuccess, "[", op, "] cuda:", device, " is not available: no CUDA device (",
           cudaGetErrorName(status), ": ", cudaGetErrorString(status), ")");
  VT_CHECK(device >= 0 && device < count, "[", op, "] cuda:", device, " is not available: ", count,
           " CUDA device(s) found");
}

void copy_strided(int device, void* dst, DType dst_dtype, const std::vector<int64_t>& dst_strides, const void* src,
                  DType src_dtype, const std::vector<int64_t>& src_strides, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n == 0) return;
  const cudaStream_t stream = current_stream();
  auto layout = coalesce<2>(shape, {dst_strides, src_strides});
  const int nd = static_cast<int>(layout.shape.size());
  VT_CHECK(nd <= kMaxDims, "[cuda_copy] at most ", kMaxDims, " non-mergeable dims, got ", nd);
  const bool contiguous = nd == 1 && layout.strides[0][0] == 1 && layout.strides[1][0] == 1;
  Geometry g{};
  g.ndim = nd;
  for (int d = 0; d < nd; ++d) {
    g.shape[d] = layout.shape[d];
    g.dst[d] = layout.strides[0][d];
    g.src[d] = layout.strides[1][d];
  }
  DeviceGuard guard(device);
  // Same dtype, rows contiguous in both and everything 16-byte aligned: copy 16-byte vectors (8 bf16, 4 f32).
  const size_t elem = dtype_size(dst_dtype);
  const int64_t per_vec = static_cast<int64_t>(sizeof(Vec16) / elem);
  bool vectorize = !contiguous && dst_dtype == src_dtype && nd >= 1 && g.dst[nd - 1] == 1 && g.src[nd - 1] == 1 &&
                   g.shape[nd - 1] % per_vec == 0 && reinterpret_cast<uintptr_t>(dst) % sizeof(Vec16) == 0 &&
                   reinterpret_cast<uintptr_t>(src) % sizeof(Vec16) == 0;
  for (int d = 0; d + 1 < nd && vectorize; ++d) vectorize = g.dst[d] % per_vec == 0 && g.src[d] % per_vec == 0;
  if (vectorize) {
    g.shape[nd - 1] /= per_vec;
    for (int d = 0; d + 1 < nd; ++d) {
      g.dst[d] /= per_vec;
      g.src[d] /= per_vec;
    }
    n /= per_vec;
  }
  int64_t dst_reach = 0, src_reach = 0;  // the largest offsets the kernel computes
  for (int d = 0; d < nd; ++d) {
    dst_reach += (g.shape[d] - 1) * std::abs(g.dst[d]);
    src_reach += (g.shape[d] - 1) * std::abs(g.src[d]);
  }
  const bool narrow = std::max({n, dst_reach + 1, src_reach + 1}) < (int64_t{1} << 31);
  auto strided = [&](auto dtag, auto stag) {
    using D = decltype(dtag);
    using S = decltype(stag);
    if (narrow)
      copy_strided_kernel<D, S, int32_t><<<grid_for(n), kBlock, 0, stream>>>(
          static_cast<D*>(dst), static_cast<const S*>(src), g, static_cast<int32_t>(n));
    else
      copy_strided_kernel<D, S, int64_t>
          <<<grid_for(n), kBlock, 0, stream>>>(static_cast<D*>(dst), static_cast<const S*>(src), g, n);
  };
  if (vectorize) {
    strided(Vec16{}, Vec16{});
  } else {
    dispatch(dst_dtype, [&](auto dtag) {
      using D = decltype(dtag);
      dispatch(src_dtype, [&](auto stag) {
        using S = decltype(stag);
        if (contiguous && std::is_same_v<D, S>) {
          VT_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * elem, cudaMemcpyDeviceToDevice, stream));
        } else if (contiguous && n % 4 == 0 && reinterpret_cast<uintptr_t>(dst) % sizeof(Four<D>) == 0 &&
                   reinterpret_cast<uintptr_t>(src) % sizeof(Four<S>) == 0) {
          copy_contiguous4_kernel<D, S><<<grid_for(n / 4), kBlock, 0, stream>>>(
              static_cast<Four<D>*>(dst), static_cast<const Four<S>*>(src), n / 4);
        } else if (contiguous) {
          copy_contiguous_kernel<D, S>
              <<<grid_for(n), kBlock, 0, stream>>>(static_cast<D*>(dst), static_cast<const S*>(src), n);
        } else {
          strided(D{}, S{});
        }
      });
    });
  }
  VT_CUDA_CHECK(cudaGetLastError());
}

void iota(int device, void* dst, DType dtype, int64_t n) {
  if (n == 0) return;
  DeviceGuard guard(device);
  dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    iota_kernel<T><<<grid_for(n), kBlock, 0, current_stream()>>>(static_cast<T*>(dst), n);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

void fill(int device, void* dst, DType dtype, int64_t n, double value) {
  if (n == 0) return;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream();
  auto launch = [&](auto v) {
    using T = decltype(v);
    fill_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(static_cast<T*>(dst), v, n);
  };
  // The value is converted on the host with the CPU rules, so both backends store the same bits.
  switch (dtype) {
    case DType::f64: launch(value); break;
    case DType::f32: launch(static_cast<float>(value)); break;
    case DType::bf16: launch(vt::bf16(static_cast<float>(value)).bits); break;
    case DType::i32: launch(static_cast<int32_t>(value)); break;
    case DType::i64: launch(static_cast<int64_t>(value)); break;
    case DType::u8: launch(static_cast<uint8_t>(value)); break;
  }
  VT_CUDA_CHECK(cudaGetLastError());
}

void memset_zero(int device, void* dst, size_t nbytes) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  VT_CUDA_CHECK(cudaMemsetAsync(dst, 0, nbytes, current_stream()));
}

void copy_host_to_device(int device, void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  // Staged through a pinned block: a cudaMemcpy from pageable memory waits for all queued work (a host
  // synchronisation in every training step that uploads a batch), an async copy from pinned memory does not.
  // The source is copied before we return, so the caller may free it at once, as before.
  const cudaStream_t stream = current_stream();
  fail_if_capturing(stream, "a host-to-device copy");
  PinnedBuffer staging(nbytes);
  std::memcpy(staging.data(), src, nbytes);
  VT_CUDA_CHECK(cudaMemcpyAsync(dst, staging.data(), nbytes, cudaMemcpyHostToDevice, stream));
  staging.record_stream(stream);  // the block is reused only after this copy has run
}

void copy_device_to_host(int device, void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  fail_if_capturing(current_stream(), "a device-to-host copy (a host synchronization)");
  VT_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost));
}

void copy_device_to_device(int dst_device, void* dst, int src_device, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device == src_device) {
    DeviceGuard guard(dst_device);
    VT_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, current_stream()));
  } else {
    VT_CUDA_CHECK(cudaMemcpyPeer(dst, dst_device, src, src_device, nbytes));
  }
}

void synchronize(int device) {
  DeviceGuard guard(device);
  VT_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace vt::kernels::cuda
