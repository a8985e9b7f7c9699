// Device helpers of the per-expert MiTA kernels on tensor cores (mita_mma.cu's forward, mita_expert_bwd.cu's
// backward): 64-row tiles of gathered rows (queries of one expert through `order`, an expert's slots through
// `expert_keys`) and the walk from a CTA index to its (expert, query tile).
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/flash_attention_device.cuh"

namespace vt::kernels::cuda::mita_tiles {

using flash::bf16;

constexpr int kRows = 64, kThreads = 128;  // rows per tile, threads (4 warps of 16 rows) per CTA

struct RowSource {  // a [B, H, rows, D] bf16 operand
  const bf16* data;
  int64_t b, h, n;
  __device__ const bf16* row(int64_t bb, int64_t hh, int64_t r) const { return data + bb * b + hh * h + r * n; }
};

inline RowSource source(const AttentionView& v) {
  return {static_cast<const bf16*>(v.data), v.batch_stride, v.head_stride, v.row_stride};
}

/// smem [kRows][D + kPad] ← the rows whose global addresses are src[r] (nullptr: a zero row; `any` is some valid
/// global address for the copies that read nothing), 16-byte cp.async.
template <int D>
__device__ __forceinline__ void load_rows(bf16* smem, const bf16* const* src, const bf16* any, int tid) {
  constexpr int kChunks = D / 8;
  for (int c = tid; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bf16* p = src[r];
    flash::cp_async16(smem + r * (D + flash::kPad) + col, p ? p + col : any, p != nullptr);
  }
}

/// Finds which expert and which 64-query tile of it CTA `tile` of a (b, h) takes: experts' tiles in order.
/// Returns false when the CTA has no work (grids are sized for the worst case N/64 + m tiles).
__device__ inline bool find_tile(const int32_t* off, int m, int tile, int& expert, int& q0, int& first, int& count) {
  __shared__ int s_found[4];
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    int before = 0;
    bool done = false;
    for (int base = 0; base < m && !done; base += 32) {
      const int e = base + lane;
      const int c = e < m ? off[e + 1] - off[e] : 0;
      const int tiles = (c + kRows - 1) / kRows;
      int incl = tiles;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += y;
      }
      const unsigned hit = __ballot_sync(0xffffffffu, e < m && tile < before + incl);
      if (hit) {
        const int l = __ffs(hit) - 1;
        const int start = __shfl_sync(0xffffffffu, before + incl - tiles, l);
        if (lane == l) {
          s_found[0] = e;
          s_found[1] = (tile - start) * kRows;
          s_found[2] = off[e];
          s_found[3] = c;
        }
        done = true;
      }
      before += __shfl_sync(0xffffffffu, incl, 31);
    }
    if (!done && lane == 0) s_found[0] = -1;
  }
  __syncthreads();
  expert = s_found[0];
  q0 = s_found[1];
  first = s_found[2];
  count = s_found[3];
  return expert >= 0;
}

}  // namespace vt::kernels::cuda::mita_tiles
