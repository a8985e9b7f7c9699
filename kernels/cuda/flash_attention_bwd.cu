// Flash attention backward (FlashAttention-2). Kernels:
//  1. row_dot: Dsum_i = Σ_c dO[i, c]·O[i, c] (f32), the softmax-backward term of each query row;
//  2. dkdv: one CTA of 4 warps owns 64 keys of one (batch, head) (each warp 16 keys) and walks every 64-query
//     tile (Q, dO double-buffered with cp.async). Per tile, with the keys as the MMA's M dimension:
//     Sᵀ = K Qᵀ, Pᵀ = exp2(Sᵀ·scale·log2 e − lse·log2 e), dVᵀ += Pᵀ dO, dPᵀ = V dOᵀ, dSᵀ = Pᵀ∘(dPᵀ − Dsum),
//     dK += dSᵀ Q; dK and dV stay in registers;
//  3. dQ, one of two ways (FlashDqMode):
//     separate_pass: a kernel shaped like the forward (64 queries per CTA, K/V tiles streamed) recomputes S, P, dP
//       and dS and keeps dQ = Σ dS K in registers: deterministic, no f32 scratch;
//     atomics: dkdv also puts dSᵀ in shared memory, each warp forms 16 rows of dQ = dS K for the CTA's keys and
//       adds them into an f32 accumulator with vector atomics; dq_convert then writes bf16(scale · accumulator).
// P and dS are rounded to bf16 before their MMAs, as in FlashAttention-2.
#include <cuda_bf16.h>

#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/flash_attention_device.cuh"

namespace vt::kernels::cuda {

using flash::bf16;

namespace {

constexpr int kBlockM = 64, kBlockN = 64, kThreads = 128;
constexpr float kLog2e = 1.4426950408889634f;

struct BwdParams {
  const bf16 *q, *k, *v, *dout;
  bf16 *dk, *dv;
  const float *lse, *dsum;
  float* dq_acc;  // [B·H, N, D] f32
  int64_t q_b, q_h, q_n, k_b, k_h, k_n, v_b, v_h, v_n, do_b, do_h, do_n;
  int64_t dk_b, dk_h, dk_n, dv_b, dv_h, dv_n;
  bf16* dq;  // separate_pass writes dq directly
  int64_t dq_b, dq_h, dq_n;
  int H, N, Nk, q_blocks, k_blocks;  // N query rows, Nk key/value rows; 64-row blocks of each
  float scale, scale_log2;
};

template <int D>
constexpr int dq_smem_bytes() {  // Q, dO [64][LD]; K, V [2][64][LD]
  return 6 * kBlockN * (D + flash::kPad) * static_cast<int>(sizeof(bf16));
}

template <int D>
constexpr int bwd_smem_bytes() {
  // K, V [64][LD]; Q, dO [2][64][LD]; dSᵀ [64][64 + pad]; lse·log2 e and Dsum [2][64] f32
  return (6 * kBlockN * (D + flash::kPad) + kBlockN * (kBlockM + flash::kPad)) * static_cast<int>(sizeof(bf16)) +
         4 * kBlockM * static_cast<int>(sizeof(float));
}

// ---- kernels ----

// One group of D/8 lanes per row: 16-byte loads of dO and O, shuffle reduction within the group.
template <int D>
__global__ void flash_attention_row_dot_kernel(float* dsum, const bf16* dout, int64_t do_b, int64_t do_h, int64_t do_n,
                                               const bf16* out, int64_t o_b, int64_t o_h, int64_t o_n, int H, int N,
                                               int64_t rows) {
  constexpr int kLanes = D / 8;
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  const int part = threadIdx.x % kLanes;
  if (row >= rows) return;  // whole groups leave together: rows are kLanes-aligned and kLanes divides 32
  const int64_t bh = row / N, n = row % N, b = bh / H, h = bh % H;
  const uint4 a = *reinterpret_cast<const uint4*>(dout + b * do_b + h * do_h + n * do_n + part * 8);
  const uint4 c = *reinterpret_cast<const uint4*>(out + b * o_b + h * o_h + n * o_n + part * 8);
  const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a);
  const __nv_bfloat162* c2 = reinterpret_cast<const __nv_bfloat162*>(&c);
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = __bfloat1622float2(a2[i]), y = __bfloat1622float2(c2[i]);
    acc += x.x * y.x + x.y * y.y;
  }
#pragma unroll
  for (int off = kLanes / 2; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off, kLanes);
  if (part == 0) dsum[row] = acc;
}

template <int D, bool kAtomicDq>
__global__ void __launch_bounds__(kThreads) flash_attention_dkdv_kernel(const BwdParams p) {
  using namespace flash;
  constexpr int LD = D + kPad, LDS = kBlockM + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sK = reinterpret_cast<bf16*>(smem_raw);               // [kBlockN][LD]
  bf16* sV = sK + kBlockN * LD;                               // [kBlockN][LD]
  bf16* sQ = sV + kBlockN * LD;                               // [2][kBlockM][LD]
  bf16* sdO = sQ + 2 * kBlockM * LD;                          // [2][kBlockM][LD]
  bf16* sdS = sdO + 2 * kBlockM * LD;                         // [kBlockN][LDS]: dSᵀ, keys × queries
  float* sL = reinterpret_cast<float*>(sdS + kBlockN * LDS);  // [2][kBlockM]: lse·log2 e (+inf past N)
  float* sDs = sL + 2 * kBlockM;                              // [2][kBlockM]: Dsum (0 past N)

  const int64_t bh = blockIdx.x / p.k_blocks;
  const int n0 = static_cast<int>(blockIdx.x % p.k_blocks) * kBlockN;
  const int64_t b = bh / p.H, h = bh % p.H;
  const bf16* q = p.q + b * p.q_b + h * p.q_h;
  const bf16* k = p.k + b * p.k_b + h * p.k_h;
  const bf16* v = p.v + b * p.v_b + h * p.v_h;
  const bf16* dout = p.dout + b * p.do_b + h * p.do_h;
  const float* lse = p.lse + bh * p.N;
  const float* dsum = p.dsum + bh * p.N;
  float* dq_acc = p.dq_acc + bh * p.N * D;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int N = p.N, Nk = p.Nk, m_tiles = (N + kBlockM - 1) / kBlockM;
  const bool key_valid[2] = {n0 + warp * 16 + g < Nk, n0 + warp * 16 + g + 8 < Nk};

  auto load_query_tile = [&](int i, int buf) {
    load_tile<D, kBlockM, kThreads>(sQ + buf * kBlockM * LD, q, p.q_n, i * kBlockM, N, tid);
    load_tile<D, kBlockM, kThreads>(sdO + buf * kBlockM * LD, dout, p.do_n, i * kBlockM, N, tid);
    if (tid < kBlockM) {
      const int row = i * kBlockM + tid;
      sL[buf * kBlockM + tid] = row < N ? lse[row] * kLog2e : INFINITY;
      sDs[buf * kBlockM + tid] = row < N ? dsum[row] : 0.f;
    }
  };
  load_tile<D, kBlockN, kThreads>(sK, k, p.k_n, n0, Nk, tid);
  load_tile<D, kBlockN, kThreads>(sV, v, p.v_n, n0, Nk, tid);
  load_query_tile(0, 0);
  cp_async_commit();

  float dk[D / 8][4], dv[D / 8][4];
  zero(dk);
  zero(dv);

  for (int i = 0; i < m_tiles; ++i) {
    if (i + 1 < m_tiles) load_query_tile(i + 1, (i + 1) & 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const int buf = i & 1;
    const bf16* qt = sQ + buf * kBlockM * LD;
    const bf16* dot = sdO + buf * kBlockM * LD;
    const float* lt = sL + buf * kBlockM;
    const float* dst = sDs + buf * kBlockM;

    // Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (16 keys × 64 queries per warp)
    float st[kBlockM / 8][4], dpt[kBlockM / 8][4];
    zero(st);
    zero(dpt);
    add_kqt_vdot<D, kBlockM>(st, dpt, sK, sV, qt, dot, LD, warp * 16, lane);

    // Pᵀ (0 for keys past N; queries past N have lse = +inf) and dSᵀ = Pᵀ∘(dPᵀ − Dsum)
#pragma unroll
    for (int j = 0; j < kBlockM / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = j * 8 + 2 * t + (e & 1);
        const float pr = key_valid[e / 2] ? exp2f(st[j][e] * p.scale_log2 - lt[col]) : 0.f;
        st[j][e] = pr;
        dpt[j][e] = pr * (dpt[j][e] - dst[col]);
      }
    }

    add_dv_dk<D, kBlockM>(dv, dk, st, dpt, dot, qt, LD, lane);  // dV += Pᵀ dO and dK += dSᵀ Q
    if constexpr (kAtomicDq) {                                  // dSᵀ (bf16) to shared memory for dQ
#pragma unroll
      for (int kk = 0; kk < kBlockM / 16; ++kk) {
        uint32_t as[4];
        a_fragment(as, dpt[2 * kk], dpt[2 * kk + 1]);
        bf16* srow = sdS + (warp * 16 + g) * LDS + kk * 16 + 2 * t;
        *reinterpret_cast<uint32_t*>(srow) = as[0];
        *reinterpret_cast<uint32_t*>(srow + 8 * LDS) = as[1];
        *reinterpret_cast<uint32_t*>(srow + 8) = as[2];
        *reinterpret_cast<uint32_t*>(srow + 8 * LDS + 8) = as[3];
      }
    }
    if constexpr (kAtomicDq) {
      __syncthreads();  // dSᵀ of all four warps is in shared memory

      // dQ rows warp·16 .. +16 of this query tile: dS (from dSᵀ) · K over the CTA's 64 keys
      float dq[D / 8][4];
      zero(dq);
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        uint32_t a[4];
        ldmatrix_x4_trans(a, a_rows_transposed(sdS, LDS, warp * 16, kk * 16, lane));
#pragma unroll
        for (int dn = 0; dn < D / 16; ++dn) {
          uint32_t bk[4];
          ldmatrix_x4_trans(bk, b_rows_kn(sK, LD, kk * 16, dn * 16, lane));
          mma_bf16(dq[2 * dn], a, bk[0], bk[1]);
          mma_bf16(dq[2 * dn + 1], a, bk[2], bk[3]);
        }
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = i * kBlockM + warp * 16 + g + 8 * r;
        if (row >= N) continue;
        float* acc = dq_acc + static_cast<int64_t>(row) * D + 2 * t;
#pragma unroll
        for (int j = 0; j < D / 8; ++j) atomic_add2(acc + j * 8, dq[j][2 * r], dq[j][2 * r + 1]);
      }
    }
    __syncthreads();  // the next iteration overwrites this tile's buffers and dSᵀ
  }

  // epilogue: dK (× scale) and dV as bf16
  bf16* dkp = p.dk + b * p.dk_b + h * p.dk_h;
  bf16* dvp = p.dv + b * p.dv_b + h * p.dv_h;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (!key_valid[r]) continue;
    const int row = n0 + warp * 16 + g + 8 * r;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      *reinterpret_cast<__nv_bfloat162*>(dkp + row * p.dk_n + j * 8 + 2 * t) =
          __floats2bfloat162_rn(dk[j][2 * r] * p.scale, dk[j][2 * r + 1] * p.scale);
      *reinterpret_cast<__nv_bfloat162*>(dvp + row * p.dv_n + j * 8 + 2 * t) =
          __floats2bfloat162_rn(dv[j][2 * r], dv[j][2 * r + 1]);
    }
  }
}

// dQ for 64 query rows of one (batch, head), 16 per warp, over all key tiles (K, V double-buffered):
// S = Q Kᵀ, dP = dO Vᵀ, P = exp2(S·scale·log2 e − lse·log2 e), dS = P∘(dP − Dsum), dQ += dS K in registers.
template <int D>
__global__ void __launch_bounds__(kThreads) flash_attention_dq_kernel(const BwdParams p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // [kBlockM][LD]
  bf16* sdO = sQ + kBlockM * LD;                 // [kBlockM][LD]
  bf16* sK = sdO + kBlockM * LD;                 // [2][kBlockN][LD]
  bf16* sV = sK + 2 * kBlockN * LD;              // [2][kBlockN][LD]

  const int64_t bh = blockIdx.x / p.q_blocks;
  const int m0 = static_cast<int>(blockIdx.x % p.q_blocks) * kBlockM;
  const int64_t b = bh / p.H, h = bh % p.H;
  const bf16* q = p.q + b * p.q_b + h * p.q_h;
  const bf16* k = p.k + b * p.k_b + h * p.k_h;
  const bf16* v = p.v + b * p.v_b + h * p.v_h;
  const bf16* dout = p.dout + b * p.do_b + h * p.do_h;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int N = p.N, Nk = p.Nk, n_tiles = (Nk + kBlockN - 1) / kBlockN;

  load_tile<D, kBlockM, kThreads>(sQ, q, p.q_n, m0, N, tid);
  load_tile<D, kBlockM, kThreads>(sdO, dout, p.do_n, m0, N, tid);
  load_tile<D, kBlockN, kThreads>(sK, k, p.k_n, 0, Nk, tid);
  load_tile<D, kBlockN, kThreads>(sV, v, p.v_n, 0, Nk, tid);
  cp_async_commit();

  float lse2[2], dsum[2];  // rows g and g+8 of this warp; past N: P = 0
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = m0 + warp * 16 + g + 8 * r;
    lse2[r] = row < N ? p.lse[bh * N + row] * kLog2e : INFINITY;
    dsum[r] = row < N ? p.dsum[bh * N + row] : 0.f;
  }
  uint32_t qf[D / 16][4], of[D / 16][4];
  float dq[D / 8][4];
  zero(dq);

  for (int j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_tiles) {
      const int nb = (j + 1) & 1;
      load_tile<D, kBlockN, kThreads>(sK + nb * kBlockN * LD, k, p.k_n, (j + 1) * kBlockN, Nk, tid);
      load_tile<D, kBlockN, kThreads>(sV + nb * kBlockN * LD, v, p.v_n, (j + 1) * kBlockN, Nk, tid);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        ldmatrix_x4(qf[kk], a_rows(sQ, LD, warp * 16, kk * 16, lane));
        ldmatrix_x4(of[kk], a_rows(sdO, LD, warp * 16, kk * 16, lane));
      }
    }
    const bf16* kt = sK + (j & 1) * kBlockN * LD;
    const bf16* vt = sV + (j & 1) * kBlockN * LD;

    float s[kBlockN / 8][4], dp[kBlockN / 8][4];
    zero(s);
    zero(dp);
    add_qkt_dovt<D, kBlockN>(s, dp, qf, of, kt, vt, LD, lane);
    const int key0 = j * kBlockN;
#pragma unroll
    for (int nt = 0; nt < kBlockN / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = key0 + nt * 8 + 2 * t + (e & 1);
        const float pr = col < Nk ? exp2f(s[nt][e] * p.scale_log2 - lse2[e / 2]) : 0.f;
        dp[nt][e] = pr * (dp[nt][e] - dsum[e / 2]);
      }
    }
    add_pv<D, kBlockN>(dq, dp, kt, LD, lane);  // dQ += dS K
    __syncthreads();                           // the next iteration's prefetch overwrites this tile's buffers
  }

  bf16* dqp = p.dq + b * p.dq_b + h * p.dq_h;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = m0 + warp * 16 + g + 8 * r;
    if (row >= N) continue;
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
      *reinterpret_cast<__nv_bfloat162*>(dqp + row * p.dq_n + i * 8 + 2 * t) =
          __floats2bfloat162_rn(dq[i][2 * r] * p.scale, dq[i][2 * r + 1] * p.scale);
  }
}

// dq[b, h, n, :] = bf16(scale · acc[bh, n, :]); one thread per 8 elements (two float4 in, one 16-byte store out).
template <int D>
__global__ void flash_attention_dq_convert_kernel(bf16* dq, int64_t dq_b, int64_t dq_h, int64_t dq_n, const float* acc,
                                                  float scale, int H, int N, int64_t chunks) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= chunks) return;
  const int64_t row = c / (D / 8), col = (c % (D / 8)) * 8;
  const int64_t bh = row / N, n = row % N, b = bh / H, h = bh % H;
  const float4 x = *reinterpret_cast<const float4*>(acc + row * D + col);
  const float4 y = *reinterpret_cast<const float4*>(acc + row * D + col + 4);
  __nv_bfloat162 r[4] = {
      __floats2bfloat162_rn(x.x * scale, x.y * scale), __floats2bfloat162_rn(x.z * scale, x.w * scale),
      __floats2bfloat162_rn(y.x * scale, y.y * scale), __floats2bfloat162_rn(y.z * scale, y.w * scale)};
  *reinterpret_cast<uint4*>(dq + b * dq_b + h * dq_h + n * dq_n + col) = *reinterpret_cast<uint4*>(r);
}

template <int D>
void launch_row_dot(float* dsum, const AttentionView& dout, const AttentionView& out, const AttentionShape& s,
                    cudaStream_t stream) {
  const int64_t rows = s.B * s.H * s.N;
  constexpr int kRowThreads = 256;
  const int64_t blocks = (rows * (D / 8) + kRowThreads - 1) / kRowThreads;
  flash_attention_row_dot_kernel<D><<<static_cast<unsigned>(blocks), kRowThreads, 0, stream>>>(
      dsum, static_cast<const bf16*>(dout.data), dout.batch_stride, dout.head_stride, dout.row_stride,
      static_cast<const bf16*>(out.data), out.batch_stride, out.head_stride, out.row_stride, static_cast<int>(s.H),
      static_cast<int>(s.N), rows);
  VT_CUDA_CHECK(cudaGetLastError());
}

template <int D>
void launch_backward(const BwdParams& p, const AttentionView& dout, const AttentionView& out, const AttentionShape& s,
                     FlashDqMode mode, cudaStream_t stream) {
  const int64_t rows = s.B * s.H * s.N;
  flash_attention_row_dot(const_cast<float*>(p.dsum), dout, out, s, stream);

  const int64_t blocks = s.B * s.H * p.k_blocks, dq_blocks = s.B * s.H * p.q_blocks;
  VT_CHECK(blocks < (int64_t{1} << 31) && dq_blocks < (int64_t{1} << 31), "[flash_attention] grid of ",
           std::max(blocks, dq_blocks), " blocks too large");
  constexpr int smem = bwd_smem_bytes<D>();
  if (mode == FlashDqMode::atomics) {
    VT_CUDA_CHECK(cudaMemsetAsync(p.dq_acc, 0, sizeof(float) * rows * D, stream));
    VT_CUDA_CHECK(
        cudaFuncSetAttribute(flash_attention_dkdv_kernel<D, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    flash_attention_dkdv_kernel<D, true><<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(p);
    VT_CUDA_CHECK(cudaGetLastError());
    const int64_t chunks = rows * (D / 8);
    flash_attention_dq_convert_kernel<D><<<static_cast<unsigned>((chunks + 255) / 256), 256, 0, stream>>>(
        p.dq, p.dq_b, p.dq_h, p.dq_n, p.dq_acc, p.scale, p.H, p.N, chunks);
    VT_CUDA_CHECK(cudaGetLastError());
    return;
  }
  VT_CUDA_CHECK(
      cudaFuncSetAttribute(flash_attention_dkdv_kernel<D, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  flash_attention_dkdv_kernel<D, false><<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK(cudaGetLastError());
  constexpr int dq_smem = dq_smem_bytes<D>();
  VT_CUDA_CHECK(
      cudaFuncSetAttribute(flash_attention_dq_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, dq_smem));
  flash_attention_dq_kernel<D><<<static_cast<unsigned>(dq_blocks), kThreads, dq_smem, stream>>>(p);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

// ---- launchers ----

void flash_attention_row_dot(float* dsum, const AttentionView& dout, const AttentionView& out, const AttentionShape& s,
                             cudaStream_t stream) {
  if (s.B * s.H * s.N == 0) return;
  switch (s.d) {
    case 32: return launch_row_dot<32>(dsum, dout, out, s, stream);
    case 64: return launch_row_dot<64>(dsum, dout, out, s, stream);
    default: return launch_row_dot<128>(dsum, dout, out, s, stream);
  }
}

int64_t flash_attention_backward_workspace(const AttentionShape& s, FlashDqMode mode) {
  return s.B * s.H * s.N * (mode == FlashDqMode::atomics ? s.d + 1 : 1);
}

void flash_attention_backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv,
                              const AttentionView& dout, const AttentionView& q, const AttentionView& k,
                              const AttentionView& v, const AttentionView& out, const float* lse, float* workspace,
                              const AttentionShape& s, cudaStream_t stream, FlashDqMode mode) {
  VT_CHECK(flash_attention_supports(s.d), "[flash_attention] head dim ", s.d, " not supported (32, 64, 128)");
  for (const AttentionView* view : {&dq, &dk, &dv, &dout, &q, &k, &v, &out})
    VT_CHECK(flash_attention_aligned(*view),
             "[flash_attention] operands must be 16-byte aligned with strides that are multiples of 8");
  VT_CHECK(s.N < (int64_t{1} << 31) && s.kv_rows() < (int64_t{1} << 31), "[flash_attention] N = ", s.N, " (keys ",
           s.kv_rows(), ") too large");
  if (s.B * s.H * s.N == 0) return;
  VT_CHECK(s.kv_rows() >= 1, "[flash_attention] needs at least one key");
  BwdParams p{};
  p.q = static_cast<const bf16*>(q.data), p.k = static_cast<const bf16*>(k.data);
  p.v = static_cast<const bf16*>(v.data), p.dout = static_cast<const bf16*>(dout.data);
  p.dk = static_cast<bf16*>(const_cast<void*>(dk.data)), p.dv = static_cast<bf16*>(const_cast<void*>(dv.data));
  p.dq = static_cast<bf16*>(const_cast<void*>(dq.data));
  // The accumulator comes first: float4/float2 accesses need it 16-byte aligned (BHN·d is a multiple of 8).
  p.lse = lse, p.dq_acc = workspace;
  p.dsum = mode == FlashDqMode::atomics ? workspace + s.B * s.H * s.N * s.d : workspace;
  p.q_b = q.batch_stride, p.q_h = q.head_stride, p.q_n = q.row_stride;
  p.k_b = k.batch_stride, p.k_h = k.head_stride, p.k_n = k.row_stride;
  p.v_b = v.batch_stride, p.v_h = v.head_stride, p.v_n = v.row_stride;
  p.do_b = dout.batch_stride, p.do_h = dout.head_stride, p.do_n = dout.row_stride;
  p.dk_b = dk.batch_stride, p.dk_h = dk.head_stride, p.dk_n = dk.row_stride;
  p.dv_b = dv.batch_stride, p.dv_h = dv.head_stride, p.dv_n = dv.row_stride;
  p.dq_b = dq.batch_stride, p.dq_h = dq.head_stride, p.dq_n = dq.row_stride;
  p.H = static_cast<int>(s.H), p.N = static_cast<int>(s.N), p.Nk = static_cast<int>(s.kv_rows());
  p.q_blocks = static_cast<int>((s.N + kBlockM - 1) / kBlockM);
  p.k_blocks = static_cast<int>((p.Nk + kBlockN - 1) / kBlockN);
  p.scale = s.scale, p.scale_log2 = s.scale * kLog2e;
  switch (s.d) {
    case 32: return launch_backward<32>(p, dout, out, s, mode, stream);
    case 64: return launch_backward<64>(p, dout, out, s, mode, stream);
    default: return launch_backward<128>(p, dout, out, s, mode, stream);
  }
}

}  // namespace vt::kernels::cuda
