// Depth-wise 3×3 conv on channels-last token rows (see dwc_tokens.h). One thread per 16 bytes of channels of one
// output row (one channel when the rows are not 16-byte aligned), the channel fastest, so a warp reads consecutive
// channels of each neighbour row (coalesced, rows from L1/L2).
// Weight gradient: one thread per 8 bytes of channels walks a slice of the B·G² positions; the slices' partial sums
// go to scratch and a second kernel adds them per (channel, tap) in slice order.
#include "kernels/cuda/mita/dwc_tokens.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <type_traits>

#include "core/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"

namespace vt::kernels::cuda {
namespace {

using device::from_acc;
using device::to_acc;

constexpr int kThreads = 256;
constexpr int kTaps = 10;             // 9 weights + the bias
constexpr int kWeightChannels = 128;  // the weight gradient's channels per block (32 threads × 4)
constexpr int kSumLanes = 8;          // slice lanes of the partials' sum

// One thread per kVec consecutive channels of one row (kVec = 1, or 16 bytes' worth when every row is 16-byte
// aligned): 32-bit index arithmetic, the neighbours' and the weights' rows loaded as vectors.
template <typename T, int kVec>
__global__ void tokens_conv_kernel(T* dst, const T* src, const T* x, int64_t x_b, int64_t x_r, const T* w,
                                   const T* bias, bool transposed, int B, int N, int C, int first, int G) {
  using V = device::Vec<T, kVec>;
  const int chunks = C / kVec, total = B * N * chunks;  // < 2^31: checked on the host
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int row = i / chunks, c = (i - row * chunks) * kVec;
    const int b = row / N, r = row - b * N;
    const V s = *reinterpret_cast<const V*>(src + int64_t(row) * C + c);
    float acc[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[e] = to_acc(s.v[e]);
    const int p = r - first;
    if (p >= 0 && p < G * G) {
      const int y = p / G, xx = p - y * G;
      if (bias) {
        const V bv = *reinterpret_cast<const V*>(bias + c);
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[e] += to_acc(bv.v[e]);
      }
      // The kVec channels' 9 taps each, contiguous in the [C, 9] weight: 9 vectors.
      V wv[9];
#pragma unroll
      for (int j = 0; j < 9; ++j) wv[j] = reinterpret_cast<const V*>(w + int64_t(c) * 9)[j];
      const T* wt = reinterpret_cast<const T*>(wv);  // wt[e * 9 + tap]
      const T* xb = x + b * x_b + c;
#pragma unroll
      for (int ky = 0; ky < 3; ++ky) {
        const int yy = transposed ? y - ky + 1 : y + ky - 1;
        if (yy < 0 || yy >= G) continue;
#pragma unroll
        for (int kx = 0; kx < 3; ++kx) {
          const int xi = transposed ? xx - kx + 1 : xx + kx - 1;
          if (xi < 0 || xi >= G) continue;
          const V xv = *reinterpret_cast<const V*>(xb + int64_t(first + yy * G + xi) * x_r);
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[e] += to_acc(wt[e * 9 + ky * 3 + kx]) * to_acc(xv.v[e]);
        }
      }
    }
    V o;
#pragma unroll
    for (int e = 0; e < kVec; ++e) o.v[e] = from_acc<T>(acc[e]);
    *reinterpret_cast<V*>(dst + int64_t(row) * C + c) = o;
  }
}

// partial[slice][c][tap] over positions [slice·per, (slice + 1)·per) of the B·G² grid positions: one thread per kVec
// channels walks its slice's positions in order (the grid coordinates stepped, not divided), so every partial is a
// fixed-order sum.
template <typename T, int kVec>
__global__ void tokens_weight_partial_kernel(float* partial, const T* g, int64_t g_b, int64_t g_r, const T* x,
                                             int64_t x_b, int64_t x_r, int B, int C, int first, int G, int per) {
  using V = device::Vec<T, kVec>;
  const int c = (blockIdx.x * blockDim.x + threadIdx.x) * kVec;
  if (c >= C) return;
  const int GG = G * G, positions = B * GG, begin = blockIdx.y * per, end = min(positions, begin + per);
  float part[kVec][kTaps] = {};
  if (begin < end) {
    int b = begin / GG, p = begin - b * GG, y = p / G, xx = p - y * G;
#pragma unroll 2
    for (int q = begin; q < end; ++q) {
      const V gv = *reinterpret_cast<const V*>(g + b * g_b + int64_t(first + p) * g_r + c);
      float gf[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        gf[e] = to_acc(gv.v[e]);
        part[e][9] += gf[e];
      }
      const T* xb = x + b * x_b + c;
      // Every tap loads (a neighbour off the grid reads the position itself and adds zero): no branches, so the
      // loads of a position and of the next go out together.
#pragma unroll
      for (int ky = 0; ky < 3; ++ky) {
        const int yy = y + ky - 1;
#pragma unroll
        for (int kx = 0; kx < 3; ++kx) {
          const int xi = xx + kx - 1;
          const bool inside = yy >= 0 && yy < G && xi >= 0 && xi < G;
          const V xv = *reinterpret_cast<const V*>(xb + int64_t(first + (inside ? yy * G + xi : p)) * x_r);
#pragma unroll
          for (int e = 0; e < kVec; ++e) part[e][ky * 3 + kx] += gf[e] * (inside ? to_acc(xv.v[e]) : 0.f);
        }
      }
      ++p;
      if (++xx == G) {
        xx = 0;
        if (++y == G) y = 0, p = 0, ++b;
      }
    }
  }
  float* out = partial + (int64_t(blockIdx.y) * C + c) * kTaps;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
#pragma unroll
    for (int t = 0; t < kTaps; ++t) out[e * kTaps + t] = part[e][t];
}

// dw, db from the slices' partials: 32 outputs (c·kTaps + tap) a block, 8 lanes each summing every 8th slice, the
// lanes then added in lane order (a fixed order: deterministic).
template <typename T>
__global__ void tokens_weight_sum_kernel(T* dw, T* db, const float* partial, int C, int slices) {
  __shared__ float lanes[kSumLanes][33];
  const int i = blockIdx.x * 32 + threadIdx.x;  // c·kTaps + tap
  float s = 0.f;
  if (i < C * kTaps)
#pragma unroll 4
    for (int k = threadIdx.y; k < slices; k += kSumLanes) s += partial[int64_t(k) * C * kTaps + i];
  lanes[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || i >= C * kTaps) return;
  float total = lanes[0][threadIdx.x];
#pragma unroll
  for (int l = 1; l < kSumLanes; ++l) total += lanes[l][threadIdx.x];
  const int c = i / kTaps, t = i % kTaps;
  if (t < 9 && dw) dw[c * 9 + t] = from_acc<T>(total);
  if (t == 9 && db) db[c] = from_acc<T>(total);
}

// Slices of the positions: ~32 one-warp blocks of 32 threads × 4 channels per multiprocessor (each walks its slice
// one position after another, so the latency is hidden by their number), each slice ≥ 32 positions.
int weight_slices(int64_t B, int64_t C, int64_t G) {
  const int64_t groups = (C + kWeightChannels - 1) / kWeightChannels, positions = B * G * G;
  const int64_t wanted = std::max<int64_t>(1, 4 * device::filling_blocks() / groups);
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(positions / 32, wanted)));
}

}  // namespace

void depthwise3x3_tokens(DType dtype, void* dst, const void* src, const TokenRows& x, const void* weight,
                         const void* bias, bool transposed, int64_t B, int64_t N, int64_t C, int64_t first, int64_t G,
                         cudaStream_t stream) {
  const int64_t total = B * N * C;
  if (total == 0) return;
  VT_CHECK(first >= 0 && first + G * G <= N && B * N < (int64_t{1} << 31) && C < (int64_t{1} << 31),
           "[depthwise3x3_tokens] grid rows [", first, ", ", first + G * G, ") do not fit N = ", N);
  VT_CHECK(total < (int64_t{1} << 31), "[depthwise3x3_tokens] ", total, " elements exceed int32");
  device::dispatch_f32_bf16(dtype, "depthwise3x3_tokens", [&](auto t) {
    using T = decltype(t);
    constexpr int kWide = 16 / sizeof(T);
    // The 16-byte path needs every row start (and the weight rows of kWide channels) on a 16-byte boundary.
    const bool wide = C % kWide == 0 && x.row % kWide == 0 && x.batch % kWide == 0 && device::aligned_to(x.data, 16) &&
                      device::aligned_to(dst, 16) && device::aligned_to(src, 16) && device::aligned_to(weight, 16) &&
                      (!bias || device::aligned_to(bias, 16));
    device::dispatch_vector_width<kWide>(wide, [&](auto vec) {
      constexpr int kVec = decltype(vec)::value;
      const int64_t threads = total / kVec;
      const unsigned grid = static_cast<unsigned>(std::min<int64_t>((threads + kThreads - 1) / kThreads, 1 << 20));
      tokens_conv_kernel<T, kVec><<<grid, kThreads, 0, stream>>>(
          static_cast<T*>(dst), static_cast<const T*>(src), static_cast<const T*>(x.data), x.batch, x.row,
          static_cast<const T*>(weight), static_cast<const T*>(bias), transposed, static_cast<int>(B),
          static_cast<int>(N), static_cast<int>(C), static_cast<int>(first), static_cast<int>(G));
    });
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

int64_t depthwise3x3_tokens_scratch(int64_t B, int64_t C, int64_t G) {
  return int64_t(weight_slices(B, C, G)) * C * kTaps;
}

void depthwise3x3_tokens_weight_grad(DType dtype, void* dweight, void* dbias, const TokenRows& g, const TokenRows& x,
                                     int64_t B, int64_t C, int64_t first, int64_t G, float* scratch,
                                     cudaStream_t stream) {
  if (C == 0 || (!dweight && !dbias)) return;
  VT_CHECK(B * G * G < (int64_t{1} << 31), "[depthwise3x3_tokens] ", B * G * G, " positions exceed int32");
  const int slices = weight_slices(B, C, G);
  const int positions = static_cast<int>(B * G * G), per = (positions + slices - 1) / slices;
  device::dispatch_f32_bf16(dtype, "depthwise3x3_tokens", [&](auto t) {
    using T = decltype(t);
    constexpr int kWide = 8 / sizeof(T);  // 8-byte loads: 4 bf16 or 2 f32 channels a thread
    const bool wide = C % kWide == 0 && g.row % kWide == 0 && g.batch % kWide == 0 && x.row % kWide == 0 &&
                      x.batch % kWide == 0 && device::aligned_to(g.data, 8) && device::aligned_to(x.data, 8);
    device::dispatch_vector_width<kWide>(wide, [&](auto vec) {
      constexpr int kVec = decltype(vec)::value;
      const dim3 grid(static_cast<unsigned>((C / kVec + 31) / 32), static_cast<unsigned>(slices));
      tokens_weight_partial_kernel<T, kVec><<<grid, 32, 0, stream>>>(
          scratch, static_cast<const T*>(g.data), g.batch, g.row, static_cast<const T*>(x.data), x.batch, x.row,
          static_cast<int>(B), static_cast<int>(C), static_cast<int>(first), static_cast<int>(G), per);
    });
    VT_CUDA_CHECK(cudaGetLastError());
    tokens_weight_sum_kernel<T><<<static_cast<unsigned>((C * kTaps + 31) / 32), dim3(32, kSumLanes), 0, stream>>>(
        static_cast<T*>(dweight), static_cast<T*>(dbias), scratch, static_cast<int>(C), slices);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
