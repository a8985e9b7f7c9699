// Depth-wise 3×3 conv on channels-last token rows (see dwc_tokens.h), tiled in shared memory. A block takes one
// image, a band of `band` grid rows and a chunk of 32 lanes' channels: it stages the band's x rows with a one-cell
// zero halo (cp.async, 16 bytes a copy, when every row is 16-byte aligned), then each warp walks every 8th position
// of the band, lane l owning channels chunk + l·kPer .. + kPer − 1. Every x element leaves DRAM about once and every
// tap reads shared memory without a bounds test.
// Weight gradient: the same band, each thread summing its channels' 9 taps and the bias over its warp's positions;
// the 8 warps' sums are added in warp order and written as the band's partial, and a second kernel adds the
// partials per (channel, tap) in band order (deterministic).
#include "kernels/cuda/mita/dwc_tokens.h"

#include <cuda_bf16.h>

#include <algorithm>

#include "core/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/flash_attention_device.cuh"

namespace vt::kernels::cuda {
namespace {

using device::from_acc;
using device::to_acc;

constexpr int kWarps = 8, kThreads = kWarps * 32;
constexpr int kTaps = 10;                 // 9 weights + the bias
constexpr int kSumLanes = 8;              // slice lanes of the partials' sum
constexpr int64_t kCellBytes = 128;       // the widest chunk's bytes per grid cell: sets the band height
constexpr int64_t kBandBytes = 48 << 10;  // staged bytes a block aims at
constexpr int64_t kReduceBytes = int64_t{kWarps} * kTaps * 64 * sizeof(float);  // the widest chunk's warp sums

/// kPiece: the elements of one staging copy, 16 bytes' worth when every x row is 16-byte aligned, else 1.
/// A lane's channels: then a 4-byte pair of bf16 (one f32), else one channel.
template <typename T, int kPiece>
constexpr int lane_channels() {
  return kPiece > 1 ? static_cast<int>(4 / sizeof(T)) : 1;
}

/// Grid rows a block's band holds: as many as fit kBandBytes with their halo, at least one.
int band_rows(int64_t G) {
  return static_cast<int>(std::clamp<int64_t>(kBandBytes / ((G + 2) * kCellBytes) - 2, 1, G));
}
int bands(int64_t G) { return static_cast<int>((G + band_rows(G) - 1) / band_rows(G)); }
int64_t band_bytes(int64_t G) { return (band_rows(G) + 2) * (G + 2) * kCellBytes; }

/// Stages x's grid rows y0 − 1 .. y0 + rows, columns −1 .. G, channels c0 .. c0 + chunk − 1 of image b into
/// tile[(row·(G + 2) + col)·chunk + channel], zeros off the grid and past C.
template <typename T, int kPiece>
__device__ void stage_band(T* tile, const T* x, int64_t x_b, int64_t x_r, int b, int first, int G, int y0, int rows,
                           int c0, int C) {
  constexpr int kChunk = 32 * lane_channels<T, kPiece>();
  const int cols = G + 2, cells = (rows + 2) * cols;
  const T* xb = x + b * x_b;
  if constexpr (kPiece > 1) {
    constexpr int kPieces = kChunk / kPiece;  // 16-byte copies, 8 a cell
    for (int i = threadIdx.x; i < cells * kPieces; i += kThreads) {
      const int cell = i / kPieces, c = c0 + (i % kPieces) * kPiece;
      const int r = cell / cols, col = cell - r * cols, yy = y0 - 1 + r, xx = col - 1;
      const bool ok = yy >= 0 && yy < G && xx >= 0 && xx < G && c < C;
      flash::cp_async16(tile + cell * kChunk + (i % kPieces) * kPiece,
                        ok ? xb + int64_t(first + yy * G + xx) * x_r + c : x, ok);
    }
    flash::cp_async_commit();
    flash::cp_async_wait<0>();
  } else {
#pragma unroll 4
    for (int i = threadIdx.x; i < cells * kChunk; i += kThreads) {
      const int cell = i / kChunk, c = c0 + i % kChunk;
      const int r = cell / cols, col = cell - r * cols, yy = y0 - 1 + r, xx = col - 1;
      const bool ok = yy >= 0 && yy < G && xx >= 0 && xx < G && c < C;
      tile[i] = ok ? xb[int64_t(first + yy * G + xx) * x_r + c] : from_acc<T>(0.f);
    }
  }
  __syncthreads();
}

// dst = src + conv(x) over one band (blockIdx.y) of image blockIdx.z, channel chunk blockIdx.x; the band-0 blocks
// also copy the rows off the grid when dst is not src.
template <typename T, int kPiece>
__global__ void __launch_bounds__(kThreads)
    tokens_conv_kernel(T* dst, const T* src, const T* x, int64_t x_b, int64_t x_r, const T* w, const T* bias,
                       bool transposed, bool copy_rest, int N, int C, int first, int G, int band) {
  constexpr int kPer = lane_channels<T, kPiece>(), kChunk = 32 * kPer;
  using V = device::Vec<T, kPer>;
  extern __shared__ __align__(16) unsigned char smem[];
  T* tile = reinterpret_cast<T*>(smem);
  const int c0 = blockIdx.x * kChunk, y0 = blockIdx.y * band, b = blockIdx.z, rows = min(band, G - y0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, c = c0 + lane * kPer;
  const bool active = c < C;
  const int64_t base = int64_t(b) * N * C;
  if (copy_rest && blockIdx.y == 0 && active)
    for (int r = warp; r < N - G * G; r += kWarps) {
      const int64_t row = base + int64_t(r < first ? r : r + G * G) * C + c;
      *reinterpret_cast<V*>(dst + row) = *reinterpret_cast<const V*>(src + row);
    }
  stage_band<T, kPiece>(tile, x, x_b, x_r, b, first, G, y0, rows, c0, C);
  if (!active) return;
  float wt[kPer][9], bv[kPer];  // the input gradient's taps are the weights flipped
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    bv[e] = bias ? to_acc(bias[c + e]) : 0.f;
#pragma unroll
    for (int tap = 0; tap < 9; ++tap) wt[e][tap] = to_acc(w[(c + e) * 9 + (transposed ? 8 - tap : tap)]);
  }
  const int cols = G + 2;
#pragma unroll 4
  for (int q = warp; q < rows * G; q += kWarps) {
    const int yl = q / G, xx = q - yl * G;
    const int64_t row = base + int64_t(first + (y0 + yl) * G + xx) * C + c;
    const V s = *reinterpret_cast<const V*>(src + row);
    float acc[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[e] = to_acc(s.v[e]) + bv[e];
#pragma unroll
    for (int ky = 0; ky < 3; ++ky)
#pragma unroll
      for (int kx = 0; kx < 3; ++kx) {
        const V t = *reinterpret_cast<const V*>(tile + ((yl + ky) * cols + xx + kx) * kChunk + lane * kPer);
#pragma unroll
        for (int e = 0; e < kPer; ++e) acc[e] += wt[e][ky * 3 + kx] * to_acc(t.v[e]);
      }
    V o;
#pragma unroll
    for (int e = 0; e < kPer; ++e) o.v[e] = from_acc<T>(acc[e]);
    *reinterpret_cast<V*>(dst + row) = o;
  }
}

// partial[b·bands + band][c][tap] = Σ over the band's positions of g·x(neighbour) (tap 9: Σ g).
template <typename T, int kPiece>
__global__ void __launch_bounds__(kThreads)
    tokens_weight_partial_kernel(float* partial, const T* g, int64_t g_b, int64_t g_r, const T* x, int64_t x_b,
                                 int64_t x_r, int C, int first, int G, int band) {
  constexpr int kPer = lane_channels<T, kPiece>(), kChunk = 32 * kPer;
  using V = device::Vec<T, kPer>;
  extern __shared__ __align__(16) unsigned char smem[];
  T* tile = reinterpret_cast<T*>(smem);
  const int c0 = blockIdx.x * kChunk, y0 = blockIdx.y * band, b = blockIdx.z, rows = min(band, G - y0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, c = c0 + lane * kPer;
  const bool active = c < C;
  stage_band<T, kPiece>(tile, x, x_b, x_r, b, first, G, y0, rows, c0, C);
  float part[kPer][kTaps] = {};
  const int cols = G + 2;
  if (active) {
    const T* gb = g + b * g_b + c;
#pragma unroll 4
    for (int q = warp; q < rows * G; q += kWarps) {
      const int yl = q / G, xx = q - yl * G;
      const V gv = *reinterpret_cast<const V*>(gb + int64_t(first + (y0 + yl) * G + xx) * g_r);
      float gf[kPer];
#pragma unroll
      for (int e = 0; e < kPer; ++e) {
        gf[e] = to_acc(gv.v[e]);
        part[e][9] += gf[e];
      }
#pragma unroll
      for (int ky = 0; ky < 3; ++ky)
#pragma unroll
        for (int kx = 0; kx < 3; ++kx) {
          const V t = *reinterpret_cast<const V*>(tile + ((yl + ky) * cols + xx + kx) * kChunk + lane * kPer);
#pragma unroll
          for (int e = 0; e < kPer; ++e) part[e][ky * 3 + kx] += gf[e] * to_acc(t.v[e]);
        }
    }
  }
  // The warps' sums through shared memory (the tile is no longer read): red[warp][tap][chunk channel].
  __syncthreads();
  float* red = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int e = 0; e < kPer; ++e)
#pragma unroll
    for (int t = 0; t < kTaps; ++t) red[(warp * kTaps + t) * kChunk + lane * kPer + e] = part[e][t];
  __syncthreads();
  float* out = partial + (int64_t(b) * gridDim.y + blockIdx.y) * C * kTaps + int64_t(c0) * kTaps;
  for (int o = threadIdx.x; o < kChunk * kTaps; o += kThreads) {
    const int cl = o / kTaps, t = o - cl * kTaps;
    if (c0 + cl >= C) break;
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kWarps; ++k) s += red[(k * kTaps + t) * kChunk + cl];
    out[o] = s;
  }
}

// dw, db from the bands' partials: 32 outputs (c·kTaps + tap) a block, 8 lanes each summing every 8th slice, the
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

/// Every row start of x aligned for the 16-byte staging.
template <typename T>
bool wide_rows(int64_t C, const TokenRows& x) {
  constexpr int64_t kPiece = 16 / sizeof(T);
  return C % kPiece == 0 && x.row % kPiece == 0 && x.batch % kPiece == 0 && device::aligned_to(x.data, 16);
}

/// The shared memory of a band kernel's block, allowed for the kernel when it is over the default 48 KB.
template <typename Kernel>
size_t prepare_band_launch(Kernel kernel, int64_t G, const char* op) {
  const int64_t bytes = std::max(band_bytes(G), kReduceBytes);
  int dev = 0, limit = 0;
  VT_CUDA_CHECK(cudaGetDevice(&dev));
  VT_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  VT_CHECK(bytes <= limit, "[", op, "] a grid side of ", G, " needs ", bytes, " bytes of shared memory a block; this",
           " device has ", limit);
  if (bytes > (48 << 10))
    VT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return static_cast<size_t>(bytes);
}

template <typename T, int kPiece>
dim3 band_grid(int64_t B, int64_t C, int64_t G) {
  constexpr int kChunk = 32 * lane_channels<T, kPiece>();
  return dim3(static_cast<unsigned>((C + kChunk - 1) / kChunk), static_cast<unsigned>(bands(G)),
              static_cast<unsigned>(B));
}

}  // namespace

void depthwise3x3_tokens(DType dtype, void* dst, const void* src, const TokenRows& x, const void* weight,
                         const void* bias, bool transposed, int64_t B, int64_t N, int64_t C, int64_t first, int64_t G,
                         cudaStream_t stream) {
  if (B * N * C == 0) return;
  VT_CHECK(first >= 0 && first + G * G <= N, "[depthwise3x3_tokens] grid rows [", first, ", ", first + G * G,
           ") do not fit N = ", N);
  VT_CHECK(B < 65536 && N * C < (int64_t{1} << 31), "[depthwise3x3_tokens] ", B, " images of ", N, " × ", C,
           " elements exceed the kernel's indexing");
  device::dispatch_f32_bf16(dtype, "depthwise3x3_tokens", [&](auto t) {
    using T = decltype(t);
    // The wide path also reads src and dst as 4-byte vectors: aligned since C is a multiple of 16 bytes' worth.
    const bool wide = wide_rows<T>(C, x) && device::aligned_to(dst, 4) && device::aligned_to(src, 4);
    device::dispatch_vector_width<16 / sizeof(T)>(wide, [&](auto piece) {
      constexpr int kPiece = decltype(piece)::value;
      auto kernel = tokens_conv_kernel<T, kPiece>;
      const size_t bytes = prepare_band_launch(kernel, G, "depthwise3x3_tokens");
      kernel<<<band_grid<T, kPiece>(B, C, G), kThreads, bytes, stream>>>(
          static_cast<T*>(dst), static_cast<const T*>(src), static_cast<const T*>(x.data), x.batch, x.row,
          static_cast<const T*>(weight), static_cast<const T*>(bias), transposed, dst != src, static_cast<int>(N),
          static_cast<int>(C), static_cast<int>(first), static_cast<int>(G), band_rows(G));
    });
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

int64_t depthwise3x3_tokens_scratch(int64_t B, int64_t C, int64_t G) { return B * bands(G) * C * kTaps; }

void depthwise3x3_tokens_weight_grad(DType dtype, void* dweight, void* dbias, const TokenRows& g, const TokenRows& x,
                                     int64_t B, int64_t C, int64_t first, int64_t G, float* scratch,
                                     cudaStream_t stream) {
  if (C == 0 || (!dweight && !dbias)) return;
  VT_CHECK(B < 65536 && B * bands(G) * C * kTaps < (int64_t{1} << 31), "[depthwise3x3_tokens] ", B, " images of ", C,
           " channels exceed the weight gradient's indexing");
  const int slices = static_cast<int>(B * bands(G));
  device::dispatch_f32_bf16(dtype, "depthwise3x3_tokens", [&](auto t) {
    using T = decltype(t);
    constexpr int64_t kPer = 4 / sizeof(T);
    const bool wide = wide_rows<T>(C, x) && g.row % kPer == 0 && g.batch % kPer == 0 && device::aligned_to(g.data, 4);
    device::dispatch_vector_width<16 / sizeof(T)>(wide, [&](auto piece) {
      constexpr int kPiece = decltype(piece)::value;
      auto kernel = tokens_weight_partial_kernel<T, kPiece>;
      const size_t bytes = prepare_band_launch(kernel, G, "depthwise3x3_tokens");
      kernel<<<band_grid<T, kPiece>(B, C, G), kThreads, bytes, stream>>>(
          scratch, static_cast<const T*>(g.data), g.batch, g.row, static_cast<const T*>(x.data), x.batch, x.row,
          static_cast<int>(C), static_cast<int>(first), static_cast<int>(G), band_rows(G));
    });
    VT_CUDA_CHECK(cudaGetLastError());
    tokens_weight_sum_kernel<T><<<static_cast<unsigned>((C * kTaps + 31) / 32), dim3(32, kSumLanes), 0, stream>>>(
        static_cast<T*>(dweight), static_cast<T*>(dbias), scratch, static_cast<int>(C), slices);
  });
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace vt::kernels::cuda
