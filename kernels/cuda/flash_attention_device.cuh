// Device helpers shared by the flash attention kernels: cp.async tile loads into padded shared memory, ldmatrix
// and the bf16 tensor-core MMA (m16n8k16, f32 accumulate) through inline PTX.
//
// Fragment layouts (PTX ISA, mma.m16n8k16): lane = 4·g + t. A (16×16, row-major) holds rows g and g+8, columns
// 2t, 2t+1 (regs 0, 1) and 8+2t, 9+2t (regs 2, 3). B (16×8) holds rows 2t, 2t+1 (reg 0) and 8+2t, 9+2t (reg 1) of
// column g. C (16×8) holds row g (c0, c1) and row g+8 (c2, c3) at columns 2t, 2t+1. Two C tiles side by side are
// exactly one A fragment, which lets P = softmax(S) feed the next MMA without leaving registers.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

namespace vt::kernels::cuda::flash {

using bf16 = __nv_bfloat16;

/// Shared-memory rows are padded by 8 elements (16 bytes): 8 ldmatrix rows then hit 8 distinct 4-bank groups.
constexpr int kPad = 8;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// 16-byte async copy global → shared; zero-fills the destination when !valid (tails of N).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

/// Rows row0 .. row0+kRows-1 of a [N, D] bf16 matrix (row stride in elements) into smem [kRows][D + kPad].
template <int D, int kRows, int kThreads>
__device__ __forceinline__ void load_tile(bf16* smem, const bf16* g, int64_t row_stride, int row0, int N, int tid) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int c = tid; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool valid = row0 + r < N;
    const bf16* src = valid ? g + static_cast<int64_t>(row0 + r) * row_stride + col : g;
    cp_async16(smem + r * (D + kPad) + col, src, valid);
  }
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

/// c += a · b for one m16n8k16 tile (b0, b1 = the B fragment).
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Two floats as one bf16x2 register (lo in the low half, as MMA fragments expect).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

/// Two side-by-side C tiles (accumulator columns 0..7 and 8..15 of 16 rows) as one bf16 A fragment: how P or dS
/// feeds the next MMA without leaving registers.
__device__ __forceinline__ void a_fragment(uint32_t (&a)[4], const float (&lo)[4], const float (&hi)[4]) {
  a[0] = pack_bf16(lo[0], lo[1]);
  a[1] = pack_bf16(lo[2], lo[3]);
  a[2] = pack_bf16(hi[0], hi[1]);
  a[3] = pack_bf16(hi[2], hi[3]);
}

// ldmatrix source addresses. Each lane names one 16-byte row of one of the four 8×8 matrices (lanes 8i..8i+7:
// matrix i). `ld` is the smem row length in elements.

/// A fragment of a row-major [m][k] tile at (m0, k0) (matrices: m 0-7/8-15 × k 0-7/8-15).
__device__ __forceinline__ const bf16* a_rows(const bf16* s, int ld, int m0, int k0, int lane) {
  return s + (m0 + (lane & 15)) * ld + k0 + (lane >> 4) * 8;
}
/// B fragments of two n-tiles (n0..n0+15) from an [n][k] tile (kᵀ stored row by row), non-transposed ldmatrix.
__device__ __forceinline__ const bf16* b_rows_nk(const bf16* s, int ld, int n0, int k0, int lane) {
  return s + (n0 + (lane & 7) + (lane >> 4) * 8) * ld + k0 + ((lane >> 3) & 1) * 8;
}
/// B fragments of two n-tiles (n0..n0+15) from a [k][n] tile, transposed ldmatrix.
__device__ __forceinline__ const bf16* b_rows_kn(const bf16* s, int ld, int k0, int n0, int lane) {
  return s + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * ld + n0 + (lane >> 4) * 8;
}
/// A fragment of [m][k] at (m0, k0) read from its transpose stored [k][m], transposed ldmatrix.
__device__ __forceinline__ const bf16* a_rows_transposed(const bf16* s, int ld, int m0, int k0, int lane) {
  return s + (k0 + (lane & 7) + (lane >> 4) * 8) * ld + m0 + ((lane >> 3) & 1) * 8;
}

}  // namespace vt::kernels::cuda::flash
