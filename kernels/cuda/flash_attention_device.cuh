// Device helpers shared by the flash attention kernels (dense: flash_attention_{fwd,bwd}.cu; MiTA's masked joint
// attention: mita_flash.cu): cp.async tile loads into padded shared memory, ldmatrix and the bf16 tensor-core MMA
// (m16n8k16, f32 accumulate) through inline PTX, and the per-warp tile products, online-softmax step and forward
// epilogue built from them.
//
// Fragment layouts (PTX ISA, mma.m16n8k16): lane = 4·g + t. A (16×16, row-major) holds rows g and g+8, columns
// 2t, 2t+1 (regs 0, 1) and 8+2t, 9+2t (regs 2, 3). B (16×8) holds rows 2t, 2t+1 (reg 0) and 8+2t, 9+2t (reg 1) of
// column g. C (16×8) holds row g (c0, c1) and row g+8 (c2, c3) at columns 2t, 2t+1. Two C tiles side by side are
// exactly one A fragment, which lets P = softmax(S) feed the next MMA without leaving registers.
#pragma once
#include <cuda_bf16.h>

#include <cmath>
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
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
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

/// p[0] += a, p[1] += b atomically (p 8-byte aligned): one vector atomic on sm_90+, two scalar ones before.
__device__ __forceinline__ void atomic_add2(float* p, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(p), make_float2(a, b));
#else
  atomicAdd(p, a);
  atomicAdd(p + 1, b);
#endif
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

// ---- the tile products of one warp (16 rows) shared by the dense and the MiTA flash kernels ----

template <int kTiles>
__device__ __forceinline__ void zero(float (&acc)[kTiles][4]) {
#pragma unroll
  for (int i = 0; i < kTiles; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
}

/// s += A · Bᵀ over kCols columns: A (16 × D) as register fragments, B rows [kCols][ld] in shared memory. 16-column
/// chunks at or past `valid_cols` are skipped (their s is left as is).
template <int D, int kCols>
__device__ __forceinline__ void add_a_bt(float (&s)[kCols / 8][4], const uint32_t (&a)[D / 16][4], const bf16* b,
                                         int ld, int lane, int valid_cols = kCols) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
    for (int nn = 0; nn < kCols / 16; ++nn) {
      if (nn * 16 >= valid_cols) continue;
      uint32_t bfr[4];
      ldmatrix_x4(bfr, b_rows_nk(b, ld, nn * 16, kk * 16, lane));
      mma_bf16(s[2 * nn], a[kk], bfr[0], bfr[1]);
      mma_bf16(s[2 * nn + 1], a[kk], bfr[2], bfr[3]);
    }
  }
}

/// The backward's two score products over one K/V tile, interleaved: s += Q Kᵀ and dp += dO Vᵀ (Q, dO fragments in
/// registers; K, V rows [kCols][ld] in shared memory).
template <int D, int kCols>
__device__ __forceinline__ void add_qkt_dovt(float (&s)[kCols / 8][4], float (&dp)[kCols / 8][4],
                                             const uint32_t (&qf)[D / 16][4], const uint32_t (&of)[D / 16][4],
                                             const bf16* k, const bf16* v, int ld, int lane) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
    for (int nn = 0; nn < kCols / 16; ++nn) {
      uint32_t bk[4], bv[4];
      ldmatrix_x4(bk, b_rows_nk(k, ld, nn * 16, kk * 16, lane));
      ldmatrix_x4(bv, b_rows_nk(v, ld, nn * 16, kk * 16, lane));
      mma_bf16(s[2 * nn], qf[kk], bk[0], bk[1]);
      mma_bf16(s[2 * nn + 1], qf[kk], bk[2], bk[3]);
      mma_bf16(dp[2 * nn], of[kk], bv[0], bv[1]);
      mma_bf16(dp[2 * nn + 1], of[kk], bv[2], bv[3]);
    }
  }
}

/// The same with the keys as MMA rows (the dK/dV pass): st += K Qᵀ and dpt += V dOᵀ for the warp's 16 key rows
/// (k0 .. k0 + 15 of the K, V tiles) against kCols queries; 16-query chunks at or past `valid_cols` are skipped.
template <int D, int kCols>
__device__ __forceinline__ void add_kqt_vdot(float (&st)[kCols / 8][4], float (&dpt)[kCols / 8][4], const bf16* k,
                                             const bf16* v, const bf16* q, const bf16* dout, int ld, int k0, int lane,
                                             int valid_cols = kCols) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t kf[4], vf[4];
    ldmatrix_x4(kf, a_rows(k, ld, k0, kk * 16, lane));
    ldmatrix_x4(vf, a_rows(v, ld, k0, kk * 16, lane));
#pragma unroll
    for (int nn = 0; nn < kCols / 16; ++nn) {
      if (nn * 16 >= valid_cols) continue;
      uint32_t bq[4], bo[4];
      ldmatrix_x4(bq, b_rows_nk(q, ld, nn * 16, kk * 16, lane));
      ldmatrix_x4(bo, b_rows_nk(dout, ld, nn * 16, kk * 16, lane));
      mma_bf16(st[2 * nn], kf, bq[0], bq[1]);
      mma_bf16(st[2 * nn + 1], kf, bq[2], bq[3]);
      mma_bf16(dpt[2 * nn], vf, bo[0], bo[1]);
      mma_bf16(dpt[2 * nn + 1], vf, bo[2], bo[3]);
    }
  }
}

/// o += P · V: P (16 × kCols accumulators, rounded to bf16 on the way) times V rows [kCols][ld]; 16-row chunks of V
/// at or past `valid_rows` are skipped (P is 0 there). The dQ pass uses it for dQ += dS · K.
template <int D, int kCols>
__device__ __forceinline__ void add_pv(float (&o)[D / 8][4], const float (&pr)[kCols / 8][4], const bf16* v, int ld,
                                       int lane, int valid_rows = kCols) {
#pragma unroll
  for (int kk = 0; kk < kCols / 16; ++kk) {
    if (kk * 16 >= valid_rows) continue;
    uint32_t a[4];
    a_fragment(a, pr[2 * kk], pr[2 * kk + 1]);
#pragma unroll
    for (int dn = 0; dn < D / 16; ++dn) {
      uint32_t bfr[4];
      ldmatrix_x4_trans(bfr, b_rows_kn(v, ld, kk * 16, dn * 16, lane));
      mma_bf16(o[2 * dn], a, bfr[0], bfr[1]);
      mma_bf16(o[2 * dn + 1], a, bfr[2], bfr[3]);
    }
  }
}

/// The dK/dV pass's accumulation over one query tile: dv += Pᵀ dO and dk += dSᵀ Q (Pᵀ, dSᵀ: the warp's 16 keys ×
/// kCols queries, rounded to bf16; dO, Q rows [kCols][ld]); 16-query chunks at or past `valid_cols` are skipped
/// (Pᵀ and dSᵀ are 0 there).
template <int D, int kCols>
__device__ __forceinline__ void add_dv_dk(float (&dv)[D / 8][4], float (&dk)[D / 8][4], const float (&pt)[kCols / 8][4],
                                          const float (&dst)[kCols / 8][4], const bf16* dout, const bf16* q, int ld,
                                          int lane, int valid_cols = kCols) {
#pragma unroll
  for (int kk = 0; kk < kCols / 16; ++kk) {
    if (kk * 16 >= valid_cols) continue;
    uint32_t ap[4], as[4];
    a_fragment(ap, pt[2 * kk], pt[2 * kk + 1]);
    a_fragment(as, dst[2 * kk], dst[2 * kk + 1]);
#pragma unroll
    for (int dn = 0; dn < D / 16; ++dn) {
      uint32_t bo[4], bq[4];
      ldmatrix_x4_trans(bo, b_rows_kn(dout, ld, kk * 16, dn * 16, lane));
      ldmatrix_x4_trans(bq, b_rows_kn(q, ld, kk * 16, dn * 16, lane));
      mma_bf16(dv[2 * dn], ap, bo[0], bo[1]);
      mma_bf16(dv[2 * dn + 1], ap, bo[2], bo[3]);
      mma_bf16(dk[2 * dn], as, bq[0], bq[1]);
      mma_bf16(dk[2 * dn + 1], as, bq[2], bq[3]);
    }
  }
}

/// One online-softmax step (log2 domain) over a tile of scaled, masked scores s (rows g and g+8 of the warp; −inf
/// where a key is not seen): updates the running max and per-thread sums, turns s into P, rescales o. A row that
/// has seen no key yet keeps max −inf and subtracts 0 instead (FlashAttention's Check_inf), so exp2f(−inf) = 0.
template <int D, int kCols>
__device__ __forceinline__ void online_softmax_step(float (&s)[kCols / 8][4], float (&row_max)[2], float (&row_sum)[2],
                                                    float (&o)[D / 8][4]) {
  float mx[2] = {row_max[0], row_max[1]};
#pragma unroll
  for (int nt = 0; nt < kCols / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) mx[e / 2] = fmaxf(mx[e / 2], s[nt][e]);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
  }
  const float base[2] = {mx[0] == -INFINITY ? 0.f : mx[0], mx[1] == -INFINITY ? 0.f : mx[1]};
  const float alpha[2] = {exp2f(row_max[0] - base[0]), exp2f(row_max[1] - base[1])};
  row_max[0] = mx[0];
  row_max[1] = mx[1];
  row_sum[0] *= alpha[0];
  row_sum[1] *= alpha[1];
#pragma unroll
  for (int nt = 0; nt < kCols / 8; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[nt][e] = exp2f(s[nt][e] - base[e / 2]);
      row_sum[e / 2] += s[nt][e];
    }
  }
#pragma unroll
  for (int i = 0; i < D / 8; ++i) {
    o[i][0] *= alpha[0];
    o[i][1] *= alpha[0];
    o[i][2] *= alpha[1];
    o[i][3] *= alpha[1];
  }
}

/// The forward's epilogue for the warp's rows row0 + g and row0 + g + 8 (those below N): finishes the row sums
/// across the quad, stores O / sum as bf16 at out + row·out_n and lse = max·ln 2 + log(sum) at lse[row].
template <int D>
__device__ __forceinline__ void store_attention_rows(bf16* out, int64_t out_n, float* lse, int row0, int N,
                                                     const float (&o)[D / 8][4], const float (&row_max)[2],
                                                     float (&row_sum)[2], int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + g + 8 * r;
    if (row >= N) continue;
    const float inv = 1.f / row_sum[r];
    bf16* dst = out + row * out_n;
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
      *reinterpret_cast<__nv_bfloat162*>(dst + i * 8 + 2 * t) =
          __floats2bfloat162_rn(o[i][2 * r] * inv, o[i][2 * r + 1] * inv);
    if (t == 0) lse[row] = row_max[r] * 0.6931471805599453f + logf(row_sum[r]);
  }
}

}  // namespace vt::kernels::cuda::flash
