// Row sums for the bias gradient (see bias_grad.h). A block of 32×32 threads owns 32 consecutive m (threadIdx.x,
// so column sums of a row-major matrix read coalesced rows); its 32 rows of threads stride over k, and the partial
// sums meet in shared memory. Deterministic: no atomics.
#include "kernels/cuda/bias_grad.h"

#include <cuda_bf16.h>

#include "core/error.h"
#include "kernels/cuda/check.h"

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

template <typename In, typename Out>
void launch(void* out, const void* in, int64_t M, int64_t K, int64_t stride_m, int64_t stride_k, cudaStream_t s) {
  const dim3 block(kTile, kTile), grid(static_cast<unsigned>((M + kTile - 1) / kTile));
  sum_rows_kernel<In, Out><<<grid, block, 0, s>>>(static_cast<Out*>(out), static_cast<const In*>(in), M, K, stride_m,
                                                  stride_k);
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
