// Row sums for the bias gradient (see bias_grad.h). Deterministic everywhere: no atomics, fixed summation orders.
// Contiguous m (stride_m = 1, column sums of a row-major [K, M] matrix, the Linear case): the K rows are split into
// slices so that the GPU fills even for M = 384; in a slice each thread sums 8 (bf16) or 4 (f32) consecutive columns
// with 16-byte loads over rows strided by the block's 8 row lanes; the lanes meet in shared memory and the slices'
// partials (in the cuBLASLt workspace of the stream) are summed per column in slice order by a second kernel.
// Otherwise: a block of 32×32 threads owns 32 consecutive m, its 32 rows of threads stride over k.
#include "kernels/cuda/bias_grad.h"

#include <cuda_bf16.h>

#include <algorithm>

#include "core/error.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/blas_context.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"

namespace vt::kernels::cuda {
namespace {

constexpr int kTile = 32;

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16(v); }

template <typename In, typename Out>
__global__ void sum_rows_kernel(Out* out, const In* in, int64_t M, int64_t K, int64_t stride_m, int64_t stride_k) {
  __shared__ float partial[kTile][kTile + 1];
  const int64_t m = blockIdx.x * int64_t(kTile) + threadIdx.x;
  float acc = 0.0f;
  if (m < M)
    for (int64_t k = threadIdx.y; k < K; k += kTile) acc += load(in, m * stride_m + k * stride_k);
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && m < M) {
    float total = 0.0f;
    for (int r = 0; r < kTile; ++r) total += partial[r][threadIdx.x];
    store(out, m, total);
  }
}

constexpr int kLanesX = 32, kRowLanes = 8;  // threads per block: 32 column groups × 8 row lanes

template <typename In>
struct Vec;  // 16 bytes of In
template <>
struct Vec<float> {
  static constexpr int n = 4;
  using type = float4;
  __device__ static void add(float* acc, const float4& v) {
    acc[0] += v.x, acc[1] += v.y, acc[2] += v.z, acc[3] += v.w;
  }
};
template <>
struct Vec<__nv_bfloat16> {
  static constexpr int n = 8;
  using type = uint4;
  __device__ static void add(float* acc, const uint4& v) {
    const auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(h[i]);
      acc[2 * i] += f.x, acc[2 * i + 1] += f.y;
    }
  }
};

// partial[slice][m] = Σ over the slice's rows k of in[k·ld + m]; M % Vec::n == 0 and 16-byte aligned rows.
template <typename In>
__global__ void column_partials_kernel(float* partial, const In* in, int64_t M, int64_t K, int64_t ld,
                                       int64_t rows_per_slice) {
  constexpr int V = Vec<In>::n;
  __shared__ float lanes[kRowLanes][kLanesX * V];
  const int64_t m0 = (int64_t(blockIdx.x) * kLanesX + threadIdx.x) * V;
  const int64_t k_begin = int64_t(blockIdx.y) * rows_per_slice, k_end = min(K, k_begin + rows_per_slice);
  float acc[V] = {};
  if (m0 < M)
#pragma unroll 4
    for (int64_t k = k_begin + threadIdx.y; k < k_end; k += kRowLanes)
      Vec<In>::add(acc, *reinterpret_cast<const typename Vec<In>::type*>(in + k * ld + m0));
#pragma unroll
  for (int i = 0; i < V; ++i) lanes[threadIdx.y][threadIdx.x * V + i] = acc[i];
  __syncthreads();
  for (int c = threadIdx.y * kLanesX + threadIdx.x; c < kLanesX * V; c += kLanesX * kRowLanes) {
    const int64_t m = int64_t(blockIdx.x) * kLanesX * V + c;
    if (m >= M) continue;
    float total = 0.f;
#pragma unroll
    for (int r = 0; r < kRowLanes; ++r) total += lanes[r][c];
    partial[int64_t(blockIdx.y) * M + m] = total;
  }
}

// out[m] = Σ_slices partial[slice][m]: 32 columns per block, 32 slice lanes each summing every 32nd slice, then the
// lanes in order.
template <typename Out>
__global__ void sum_partials_kernel(Out* out, const float* partial, int64_t M, int slices) {
  __shared__ float lanes[kTile][kTile + 1];
  const int64_t m = int64_t(blockIdx.x) * kTile + threadIdx.x;
  float acc = 0.f;
  if (m < M)
#pragma unroll 4
    for (int s = threadIdx.y; s < slices; s += kTile) acc += partial[int64_t(s) * M + m];
  lanes[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && m < M) {
    float total = 0.f;
    for (int r = 0; r < kTile; ++r) total += lanes[r][threadIdx.x];
    store(out, m, total);
  }
}

// The sliced path when it applies (contiguous columns, vector-aligned rows, a workspace for the partials).
template <typename In, typename Out>
bool launch_sliced(void* out, const void* in, int64_t M, int64_t K, int64_t ld, cudaStream_t s) {
  constexpr int V = Vec<In>::n;
  if (M % V != 0 || ld % V != 0 || reinterpret_cast<uintptr_t>(in) % 16 != 0 || K < 256) return false;
  int device = 0;
  VT_CUDA_CHECK(cudaGetDevice(&device));
  const int64_t blocks_x = (M + kLanesX * V - 1) / (kLanesX * V);
  const int64_t max_slices = static_cast<int64_t>(BlasContext::kWorkspaceBytes / sizeof(float)) / M;
  const int64_t wanted = std::max<int64_t>(1, device::filling_blocks() / blocks_x);
  const int64_t slices = std::min<int64_t>({wanted, K / 64, max_slices, 65535});
  if (slices < 2) return false;
  const int64_t rows_per_slice = (K + slices - 1) / slices;
  const int used = static_cast<int>((K + rows_per_slice - 1) / rows_per_slice);
  auto* partial = static_cast<float*>(BlasContext::get(device).workspace(s));  // stream-ordered after any GEMM
  column_partials_kernel<In>
      <<<dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(used)), dim3(kLanesX, kRowLanes), 0, s>>>(
          partial, static_cast<const In*>(in), M, K, ld, rows_per_slice);
  VT_CUDA_CHECK(cudaGetLastError());
  sum_partials_kernel<Out><<<static_cast<unsigned>((M + kTile - 1) / kTile), dim3(kTile, kTile), 0, s>>>(
      static_cast<Out*>(out), partial, M, used);
  VT_CUDA_CHECK(cudaGetLastError());
  return true;
}

template <typename In, typename Out>
void launch(void* out, const void* in, int64_t M, int64_t K, int64_t stride_m, int64_t stride_k, cudaStream_t s) {
  if (stride_m == 1 && launch_sliced<In, Out>(out, in, M, K, stride_k, s)) return;
  const dim3 block(kTile, kTile), grid(static_cast<unsigned>((M + kTile - 1) / kTile));
  sum_rows_kernel<In, Out>
      <<<grid, block, 0, s>>>(static_cast<Out*>(out), static_cast<const In*>(in), M, K, stride_m, stride_k);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void sum_rows_strided(void* out, DType out_dtype, const void* in, DType in_dtype, int64_t M, int64_t K,
                      int64_t stride_m, int64_t stride_k, cudaStream_t stream) {
  if (M == 0) return;
  const bool in_f32 = in_dtype == DType::f32, out_f32 = out_dtype == DType::f32;
  VT_CHECK((in_f32 || in_dtype == DType::bf16) && (out_f32 || out_dtype == DType::bf16),
           "[sum_rows_strided] needs f32 or bf16, got ", dtype_name(in_dtype), " -> ", dtype_name(out_dtype));
  if (in_f32 && out_f32) return launch<float, float>(out, in, M, K, stride_m, stride_k, stream);
  if (in_f32) return launch<float, __nv_bfloat16>(out, in, M, K, stride_m, stride_k, stream);
  if (out_f32) return launch<__nv_bfloat16, float>(out, in, M, K, stride_m, stride_k, stream);
  launch<__nv_bfloat16, __nv_bfloat16>(out, in, M, K, stride_m, stride_k, stream);
}

}  // namespace vt::kernels::cuda
