// MiTA's joint attention as a masked flash attention (see mita_flash.h for the slot space and the mask).
// Kernels, all in the FlashAttention-2 scheme of flash_attention_{fwd,bwd}.cu (64×64 tiles, 4 warps, bf16
// m16n8k16 MMAs with f32 accumulation, cp.async double buffering, online softmax in the log2 domain):
//  mask:   one block per (b, h, expert) ORs its k keys into ceil(N/32) words (workspace);
//  fwd:    64 queries per CTA stream the P + N slots; tiles mix landmark rows (slots < P) and key rows; a slot
//          outside the query's expert gets −inf; the logit scale is per slot (shared / routed);
//  row_dot: Dsum_n = dO_n·O_n;
//  dkdv:   one CTA per 64 slots walks every query tile (Pᵀ, dSᵀ with the keys as MMA rows); which queries may
//          see its slots comes from a per-expert 64-bit window of the masks built once per CTA; shared slots
//          write dr / dv̂ (f32), routed ones dk / dv (bf16);
//  dq:     shaped like the forward, recomputes P and dS and keeps dQ = Σ_c dS_c·scale_c·K_c in registers.
// Nothing uses atomics on global memory, so the gradients are deterministic. A route-only row may see no slot in
// a whole tile: its running max stays −inf and the rescaling subtracts 0 instead (FlashAttention's Check_inf).
#include "kernels/cuda/mita/mita_flash.h"

#include <cuda_bf16.h>

#include <cmath>
#include <initializer_list>

#include "kernels/cuda/check.h"
#include "kernels/cuda/flash_attention_device.cuh"

namespace vt::kernels::cuda {

using flash::bf16;

namespace {

constexpr int kBlock = 64, kThreads = 128;  // 64 queries or slots per CTA, 16 per warp
constexpr int kMaxN = 4096, kMaxM = 1024;
constexpr float kLog2e = 1.4426950408889634f;

/// A bf16 [B, H, rows, d] operand on the device.
struct Operand {
  const bf16* p = nullptr;
  int64_t b = 0, h = 0, n = 0;
  __device__ const bf16* at(int64_t bi, int64_t hi) const { return p + bi * b + hi * h; }
  __device__ bf16* mutable_at(int64_t bi, int64_t hi) const { return const_cast<bf16*>(at(bi, hi)); }
};

Operand operand(const AttentionView& v) {
  return {static_cast<const bf16*>(v.data), v.batch_stride, v.head_stride, v.row_stride};
}

AttentionView view_of(const Operand& o) { return {o.p, o.b, o.h, o.n}; }

struct Params {
  Operand q, k, v, r, vh;         // inputs; r, vh alias k, v when route-only (never read then)
  Operand out, dout, dq, dk, dv;  // out: written by the forward, read by the backward
  float* lse;                     // [B·H·N]
  float* dsum;                    // [B·H·N]
  float *dr, *dvh;                // [B·H·m, d] f32
  const uint32_t* mask;           // [B·H·m, W]
  const int32_t* experts;         // [B·H·N]
  int H, N, P, m, W, slots;       // slots = P + N
  float scale, shared_scale, scale_log2, shared_log2;
};

template <int D>
constexpr int tiles_smem_bytes() {  // six [64][D + pad] bf16 tiles: every kernel's Q, dO / K, V buffers
  return 6 * kBlock * (D + flash::kPad) * static_cast<int>(sizeof(bf16));
}

// ---- device helpers ----

/// Bit i (0..63): may a query whose expert has key mask `words` see slot c0 + i? Slots < P always, slots past
/// P + N never (their routed bits are beyond the mask).
__device__ __forceinline__ uint64_t slot_window(const uint32_t* words, int W, int P, int c0) {
  const int j0 = c0 - P;                 // routed index of slot c0; negative inside the shared prefix
  const int w0 = j0 >> 5, sh = j0 & 31;  // floor division and remainder, also for j0 < 0
  auto word = [&](int w) -> uint64_t { return w >= 0 && w < W ? words[w] : 0u; };
  uint64_t bits = (word(w0) | word(w0 + 1) << 32) >> sh;
  if (sh != 0) bits |= word(w0 + 2) << (64 - sh);
  const int shared_left = P - c0;
  if (shared_left > 0) bits |= shared_left >= 64 ? ~0ull : (1ull << shared_left) - 1;
  return bits;
}

/// Slots c0 .. c0 + 63 of [pre (P rows); main (N rows)] into smem [64][D + pad]; zeros past the last slot.
template <int D>
__device__ __forceinline__ void load_slots(bf16* smem, const bf16* pre, int64_t pre_n, const bf16* main, int64_t main_n,
                                           int c0, int P, int slots, int tid) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int c = tid; c < kBlock * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8, slot = c0 + r;
    const bool valid = slot < slots;
    const bf16* src = !valid     ? main
                      : slot < P ? pre + static_cast<int64_t>(slot) * pre_n + col
                                 : main + static_cast<int64_t>(slot - P) * main_n + col;
    flash::cp_async16(smem + r * (D + flash::kPad) + col, src, valid);
  }
}

/// The key mask of query `row` of (batch, head) bh, or nullptr past N (such rows see nothing).
__device__ __forceinline__ const uint32_t* query_mask(const Params& p, int64_t bh, int row) {
  if (row >= p.N) return nullptr;
  return p.mask + (bh * p.m + p.experts[bh * p.N + row]) * p.W;
}

// ---- kernels ----

__global__ void mita_flash_mask_kernel(uint32_t* mask, const int32_t* expert_keys, int k, int W) {
  __shared__ uint32_t words[kMaxN / 32];
  const int64_t row = blockIdx.x;  // (b, h, expert)
  for (int w = threadIdx.x; w < W; w += blockDim.x) words[w] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < k; i += blockDim.x) {
    const int j = expert_keys[row * k + i];
    atomicOr(&words[j >> 5], 1u << (j & 31));
  }
  __syncthreads();
  for (int w = threadIdx.x; w < W; w += blockDim.x) mask[row * W + w] = words[w];
}

template <int D>
__global__ void __launch_bounds__(kThreads) mita_flash_fwd_kernel(const Params p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // [64][LD]
  bf16* sK = sQ + kBlock * LD;                   // [2][64][LD]
  bf16* sV = sK + 2 * kBlock * LD;               // [2][64][LD]

  const int m_blocks = (p.N + kBlock - 1) / kBlock;
  const int64_t bh = blockIdx.x / m_blocks;
  const int m0 = static_cast<int>(blockIdx.x % m_blocks) * kBlock;
  const int64_t b = bh / p.H, h = bh % p.H;
  const bf16 *q = p.q.at(b, h), *k = p.k.at(b, h), *v = p.v.at(b, h), *r = p.r.at(b, h), *vh = p.vh.at(b, h);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int N = p.N, P = p.P, slots = p.slots, n_tiles = (slots + kBlock - 1) / kBlock;
  const uint32_t* row_mask[2] = {query_mask(p, bh, m0 + warp * 16 + g), query_mask(p, bh, m0 + warp * 16 + g + 8)};

  load_tile<D, kBlock, kThreads>(sQ, q, p.q.n, m0, N, tid);
  load_slots<D>(sK, r, p.r.n, k, p.k.n, 0, P, slots, tid);
  load_slots<D>(sV, vh, p.vh.n, v, p.v.n, 0, P, slots, tid);
  cp_async_commit();

  uint32_t qf[D / 16][4];
  float o[D / 8][4];
  zero(o);
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};  // rows g and g+8; sums are per thread

  for (int j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_tiles) {
      const int nb = (j + 1) & 1;
      load_slots<D>(sK + nb * kBlock * LD, r, p.r.n, k, p.k.n, (j + 1) * kBlock, P, slots, tid);
      load_slots<D>(sV + nb * kBlock * LD, vh, p.vh.n, v, p.v.n, (j + 1) * kBlock, P, slots, tid);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[kk], a_rows(sQ, LD, warp * 16, kk * 16, lane));
    }
    const bf16* kt = sK + (j & 1) * kBlock * LD;
    const bf16* vt = sV + (j & 1) * kBlock * LD;
    const int key0 = j * kBlock, valid_keys = min(kBlock, slots - key0);
    if (m0 + warp * 16 < N) {  // warps whose rows all lie past N skip their MMAs (as the dense forward does)
      float s[kBlock / 8][4];
      zero(s);
      add_a_bt<D, kBlock>(s, qf, kt, LD, lane, valid_keys);
      // mask and per-slot scale, then the online softmax in the log2 domain
      const uint64_t allowed[2] = {row_mask[0] ? slot_window(row_mask[0], p.W, P, key0) : 0ull,
                                   row_mask[1] ? slot_window(row_mask[1], p.W, P, key0) : 0ull};
#pragma unroll
      for (int nt = 0; nt < kBlock / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = nt * 8 + 2 * t + (e & 1);
          const float sc = key0 + i < P ? p.shared_log2 : p.scale_log2;
          s[nt][e] = (allowed[e / 2] >> i) & 1 ? s[nt][e] * sc : -INFINITY;
        }
      }
      online_softmax_step<D, kBlock>(s, row_max, row_sum, o);
      add_pv<D, kBlock>(o, s, vt, LD, lane, valid_keys);  // O += P V
    }
    __syncthreads();  // the next iteration's prefetch overwrites this tile's buffers
  }

  // row sums > 0: every query sees its expert's k ≥ 1 keys
  store_attention_rows<D>(p.out.mutable_at(b, h), p.out.n, p.lse + bh * N, m0 + warp * 16, N, o, row_max, row_sum,
                          lane);
}

template <int D>
__global__ void __launch_bounds__(kThreads) mita_flash_dkdv_kernel(const Params p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sK = reinterpret_cast<bf16*>(smem_raw);                        // [64][LD]
  bf16* sV = sK + kBlock * LD;                                         // [64][LD]
  bf16* sQ = sV + kBlock * LD;                                         // [2][64][LD]
  bf16* sdO = sQ + 2 * kBlock * LD;                                    // [2][64][LD]
  uint64_t* sQM = reinterpret_cast<uint64_t*>(sdO + 2 * kBlock * LD);  // [2][64]: query may see slot n0 + bit
  uint64_t* sEM = sQM + 2 * kBlock;                                    // [m]: the same per expert
  float* sL = reinterpret_cast<float*>(sEM + p.m);                     // [2][64]: lse·log2 e (+inf past N)
  float* sDs = sL + 2 * kBlock;                                        // [2][64]: Dsum (0 past N)

  const int n_blocks = (p.slots + kBlock - 1) / kBlock;
  const int64_t bh = blockIdx.x / n_blocks;
  const int n0 = static_cast<int>(blockIdx.x % n_blocks) * kBlock;
  const int64_t b = bh / p.H, h = bh % p.H;
  const bf16 *q = p.q.at(b, h), *dout = p.dout.at(b, h);
  const float* lse = p.lse + bh * p.N;
  const float* dsum = p.dsum + bh * p.N;
  const int32_t* experts = p.experts + bh * p.N;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int N = p.N, P = p.P, m_tiles = (N + kBlock - 1) / kBlock;
  const int my_slot[2] = {n0 + warp * 16 + g, n0 + warp * 16 + g + 8};
  const bool slot_valid[2] = {my_slot[0] < p.slots, my_slot[1] < p.slots};
  const float slot_log2[2] = {my_slot[0] < P ? p.shared_log2 : p.scale_log2,
                              my_slot[1] < P ? p.shared_log2 : p.scale_log2};

  for (int e = tid; e < p.m; e += kThreads) sEM[e] = slot_window(p.mask + (bh * p.m + e) * p.W, p.W, P, n0);
  __syncthreads();

  auto load_query_tile = [&](int i, int buf) {
    load_tile<D, kBlock, kThreads>(sQ + buf * kBlock * LD, q, p.q.n, i * kBlock, N, tid);
    load_tile<D, kBlock, kThreads>(sdO + buf * kBlock * LD, dout, p.dout.n, i * kBlock, N, tid);
    if (tid < kBlock) {
      const int row = i * kBlock + tid;
      sL[buf * kBlock + tid] = row < N ? lse[row] * kLog2e : INFINITY;
      sDs[buf * kBlock + tid] = row < N ? dsum[row] : 0.f;
      sQM[buf * kBlock + tid] = row < N ? sEM[experts[row]] : 0ull;
    }
  };
  load_slots<D>(sK, p.r.at(b, h), p.r.n, p.k.at(b, h), p.k.n, n0, P, p.slots, tid);
  load_slots<D>(sV, p.vh.at(b, h), p.vh.n, p.v.at(b, h), p.v.n, n0, P, p.slots, tid);
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
    const bf16* qt = sQ + buf * kBlock * LD;
    const bf16* dot = sdO + buf * kBlock * LD;
    const float* lt = sL + buf * kBlock;
    const float* dst = sDs + buf * kBlock;
    const uint64_t* qm = sQM + buf * kBlock;

    // Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (16 slots × 64 queries per warp)
    float st[kBlock / 8][4], dpt[kBlock / 8][4];
    zero(st);
    zero(dpt);
    add_kqt_vdot<D, kBlock>(st, dpt, sK, sV, qt, dot, LD, warp * 16, lane);

    // Pᵀ (0 where the query may not see the slot, for slots past the end and queries past N) and
    // dSᵀ = Pᵀ∘(dPᵀ − Dsum), both without the slot's scale (the epilogue applies it to dK)
#pragma unroll
    for (int j = 0; j < kBlock / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = j * 8 + 2 * t + (e & 1);
        const bool seen = slot_valid[e / 2] && ((qm[col] >> (warp * 16 + g + 8 * (e / 2))) & 1);
        const float pr = seen ? exp2f(st[j][e] * slot_log2[e / 2] - lt[col]) : 0.f;
        st[j][e] = pr;
        dpt[j][e] = pr * (dpt[j][e] - dst[col]);
      }
    }

    add_dv_dk<D, kBlock>(dv, dk, st, dpt, dot, qt, LD, lane);  // dV += Pᵀ dO and dK += dSᵀ Q
    __syncthreads();                                           // the next iteration overwrites this tile's buffers
  }

  // epilogue: shared slots → dr (× shared_scale), dv̂ in f32; routed slots → dk (× scale), dv in bf16
  bf16* dkp = p.dk.mutable_at(b, h);
  bf16* dvp = p.dv.mutable_at(b, h);
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    if (!slot_valid[rr]) continue;
    const int slot = my_slot[rr];
    if (slot < P) {
      float* drp = p.dr + (bh * p.m + slot) * D;
      float* dvhp = p.dvh + (bh * p.m + slot) * D;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        *reinterpret_cast<float2*>(drp + j * 8 + 2 * t) =
            make_float2(dk[j][2 * rr] * p.shared_scale, dk[j][2 * rr + 1] * p.shared_scale);
        *reinterpret_cast<float2*>(dvhp + j * 8 + 2 * t) = make_float2(dv[j][2 * rr], dv[j][2 * rr + 1]);
      }
    } else {
      const int64_t row = slot - P;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        *reinterpret_cast<__nv_bfloat162*>(dkp + row * p.dk.n + j * 8 + 2 * t) =
            __floats2bfloat162_rn(dk[j][2 * rr] * p.scale, dk[j][2 * rr + 1] * p.scale);
        *reinterpret_cast<__nv_bfloat162*>(dvp + row * p.dv.n + j * 8 + 2 * t) =
            __floats2bfloat162_rn(dv[j][2 * rr], dv[j][2 * rr + 1]);
      }
    }
  }
}

// dQ for 64 query rows (16 per warp) over all slot tiles: S = Q Kᵀ, dP = dO Vᵀ, P = exp2(S·scale_c·log2 e −
// lse·log2 e) where allowed, dS = P∘(dP − Dsum)·scale_c, dQ += dS K in registers.
template <int D>
__global__ void __launch_bounds__(kThreads) mita_flash_dq_kernel(const Params p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // [64][LD]
  bf16* sdO = sQ + kBlock * LD;                  // [64][LD]
  bf16* sK = sdO + kBlock * LD;                  // [2][64][LD]
  bf16* sV = sK + 2 * kBlock * LD;               // [2][64][LD]

  const int m_blocks = (p.N + kBlock - 1) / kBlock;
  const int64_t bh = blockIdx.x / m_blocks;
  const int m0 = static_cast<int>(blockIdx.x % m_blocks) * kBlock;
  const int64_t b = bh / p.H, h = bh % p.H;
  const bf16 *q = p.q.at(b, h), *k = p.k.at(b, h), *v = p.v.at(b, h), *r = p.r.at(b, h), *vh = p.vh.at(b, h);
  const bf16* dout = p.dout.at(b, h);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int N = p.N, P = p.P, slots = p.slots, n_tiles = (slots + kBlock - 1) / kBlock;
  const uint32_t* row_mask[2] = {query_mask(p, bh, m0 + warp * 16 + g), query_mask(p, bh, m0 + warp * 16 + g + 8)};

  load_tile<D, kBlock, kThreads>(sQ, q, p.q.n, m0, N, tid);
  load_tile<D, kBlock, kThreads>(sdO, dout, p.dout.n, m0, N, tid);
  load_slots<D>(sK, r, p.r.n, k, p.k.n, 0, P, slots, tid);
  load_slots<D>(sV, vh, p.vh.n, v, p.v.n, 0, P, slots, tid);
  cp_async_commit();

  float lse2[2], dsum[2];  // rows g and g+8 of this warp; past N: nothing allowed
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int row = m0 + warp * 16 + g + 8 * rr;
    lse2[rr] = row < N ? p.lse[bh * N + row] * kLog2e : INFINITY;
    dsum[rr] = row < N ? p.dsum[bh * N + row] : 0.f;
  }
  uint32_t qf[D / 16][4], of[D / 16][4];
  float dq[D / 8][4];
  zero(dq);

  for (int j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_tiles) {
      const int nb = (j + 1) & 1;
      load_slots<D>(sK + nb * kBlock * LD, r, p.r.n, k, p.k.n, (j + 1) * kBlock, P, slots, tid);
      load_slots<D>(sV + nb * kBlock * LD, vh, p.vh.n, v, p.v.n, (j + 1) * kBlock, P, slots, tid);
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
    const bf16* kt = sK + (j & 1) * kBlock * LD;
    const bf16* vt = sV + (j & 1) * kBlock * LD;

    float s[kBlock / 8][4], dp[kBlock / 8][4];
    zero(s);
    zero(dp);
    add_qkt_dovt<D, kBlock>(s, dp, qf, of, kt, vt, LD, lane);
    const int key0 = j * kBlock;
    const uint64_t allowed[2] = {row_mask[0] ? slot_window(row_mask[0], p.W, P, key0) : 0ull,
                                 row_mask[1] ? slot_window(row_mask[1], p.W, P, key0) : 0ull};
#pragma unroll
    for (int nt = 0; nt < kBlock / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = nt * 8 + 2 * t + (e & 1);
        const bool shared_slot = key0 + i < P;
        const float pr = (allowed[e / 2] >> i) & 1
                             ? exp2f(s[nt][e] * (shared_slot ? p.shared_log2 : p.scale_log2) - lse2[e / 2])
                             : 0.f;
        dp[nt][e] = pr * (dp[nt][e] - dsum[e / 2]) * (shared_slot ? p.shared_scale : p.scale);
      }
    }
    add_pv<D, kBlock>(dq, dp, kt, LD, lane);  // dQ += dS K
    __syncthreads();                          // the next iteration's prefetch overwrites this tile's buffers
  }

  bf16* dqp = p.dq.mutable_at(b, h);
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int row = m0 + warp * 16 + g + 8 * rr;
    if (row >= N) continue;
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
      *reinterpret_cast<__nv_bfloat162*>(dqp + row * p.dq.n + i * 8 + 2 * t) =
          __floats2bfloat162_rn(dq[i][2 * rr], dq[i][2 * rr + 1]);
  }
}

// ---- host side ----

int words_per_mask(const MitaShape& s) { return static_cast<int>((s.N + 31) / 32); }

int64_t mask_words(const MitaShape& s) { return s.B * s.H * s.m * words_per_mask(s); }

void check_args(const MitaShape& s, const MitaRoutingArrays& routing,
                std::initializer_list<const AttentionView*> views) {
  VT_CHECK(mita_flash_supported(s), "[mita_flash] unsupported shape: d = ", s.d, " (32, 64, 128), N = ", s.N, " (≤ ",
           kMaxN, "), m = ", s.m, " (1..", kMaxM, "), k = ", s.k, " (1..N)");
  VT_CHECK(routing.expert_keys && routing.experts, "[mita_flash] routing arrays missing");
  for (const AttentionView* view : views)
    VT_CHECK(flash_attention_aligned(*view),
             "[mita_flash] operands must be 16-byte aligned with strides that are multiples of 8");
}

/// Params common to both directions; the key masks are built into the start of the workspace.
Params make_params(const AttentionView& q, const AttentionView& k, const AttentionView& v, const AttentionView& r,
                   const AttentionView& v_hat, const MitaRoutingArrays& routing, const MitaShape& s, float* workspace,
                   cudaStream_t stream) {
  Params p{};
  p.q = operand(q), p.k = operand(k), p.v = operand(v);
  p.r = s.shared ? operand(r) : p.k, p.vh = s.shared ? operand(v_hat) : p.v;
  p.mask = reinterpret_cast<const uint32_t*>(workspace);
  p.experts = routing.experts;
  p.H = static_cast<int>(s.H), p.N = static_cast<int>(s.N), p.P = s.shared ? static_cast<int>(s.m) : 0;
  p.m = static_cast<int>(s.m), p.W = words_per_mask(s), p.slots = p.P + p.N;
  p.scale = s.scale, p.shared_scale = s.shared_scale;
  p.scale_log2 = s.scale * kLog2e, p.shared_log2 = s.shared_scale * kLog2e;
  const int64_t rows = s.B * s.H * s.m;
  VT_CHECK(rows < (int64_t{1} << 31), "[mita_flash] too many experts: ", rows);
  mita_flash_mask_kernel<<<static_cast<unsigned>(rows), 64, 0, stream>>>(
      reinterpret_cast<uint32_t*>(workspace), routing.expert_keys, static_cast<int>(s.k), p.W);
  VT_CUDA_CHECK(cudaGetLastError());
  return p;
}

unsigned grid_of(const MitaShape& s, int64_t rows) {
  const int64_t blocks = s.B * s.H * ((rows + kBlock - 1) / kBlock);
  VT_CHECK(blocks < (int64_t{1} << 31), "[mita_flash] grid of ", blocks, " blocks too large");
  return static_cast<unsigned>(blocks);
}

template <int D>
void launch_forward(const Params& p, const MitaShape& s, cudaStream_t stream) {
  constexpr int smem = 5 * kBlock * (D + flash::kPad) * static_cast<int>(sizeof(bf16));  // Q; K, V × 2
  VT_CUDA_CHECK(cudaFuncSetAttribute(mita_flash_fwd_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  mita_flash_fwd_kernel<D><<<grid_of(s, s.N), kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK(cudaGetLastError());
}

template <int D>
void launch_backward(const Params& p, const MitaShape& s, cudaStream_t stream) {
  // Dsum_n = dO_n·O_n, as the dense backward's first step
  flash_attention_row_dot(p.dsum, view_of(p.dout), view_of(p.out), AttentionShape{s.B, s.H, s.N, s.d, s.scale}, stream);
  // the six tiles, the query masks [2][64] and per-expert masks [m] (u64), lse and Dsum [2][64] (f32)
  const int dkdv_smem = tiles_smem_bytes<D>() + (2 * kBlock + p.m) * 8 + 4 * kBlock * 4;
  VT_CUDA_CHECK(
      cudaFuncSetAttribute(mita_flash_dkdv_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, dkdv_smem));
  mita_flash_dkdv_kernel<D><<<grid_of(s, p.slots), kThreads, dkdv_smem, stream>>>(p);
  VT_CUDA_CHECK(cudaGetLastError());

  constexpr int dq_smem = tiles_smem_bytes<D>();
  VT_CUDA_CHECK(cudaFuncSetAttribute(mita_flash_dq_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, dq_smem));
  mita_flash_dq_kernel<D><<<grid_of(s, s.N), kThreads, dq_smem, stream>>>(p);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

// ---- launchers ----

bool mita_flash_supported(const MitaShape& s) {
  return flash_attention_supports(s.d) && s.N >= 1 && s.N <= kMaxN && s.m >= 1 && s.m <= kMaxM && s.k >= 1 &&
         s.k <= s.N;
}

int64_t mita_flash_workspace(const MitaShape& s) { return mask_words(s) + s.B * s.H * s.N; }

void mita_flash_forward(const AttentionView& out, float* lse, const AttentionView& q, const AttentionView& k,
                        const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                        const MitaRoutingArrays& routing, const MitaShape& s, float* workspace, cudaStream_t stream) {
  if (s.B * s.H == 0) return;
  check_args(s, routing, {&out, &q, &k, &v});
  if (s.shared) check_args(s, routing, {&r, &v_hat});
  Params p = make_params(q, k, v, r, v_hat, routing, s, workspace, stream);
  p.out = operand(out), p.lse = lse;
  switch (s.d) {
    case 32: return launch_forward<32>(p, s, stream);
    case 64: return launch_forward<64>(p, s, stream);
    default: return launch_forward<128>(p, s, stream);
  }
}

void mita_flash_backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv, float* dr,
                         float* dv_hat, const AttentionView& dout, const AttentionView& q, const AttentionView& k,
                         const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                         const AttentionView& out, const float* lse, const MitaRoutingArrays& routing,
                         const MitaShape& s, float* workspace, cudaStream_t stream) {
  if (s.B * s.H == 0) return;
  check_args(s, routing, {&dq, &dk, &dv, &dout, &q, &k, &v, &out});
  if (s.shared) {
    check_args(s, routing, {&r, &v_hat});
    VT_CHECK(dr && dv_hat, "[mita_flash] dr and dv_hat are needed with the shared branch");
  }
  Params p = make_params(q, k, v, r, v_hat, routing, s, workspace, stream);
  p.out = operand(out), p.dout = operand(dout), p.dq = operand(dq), p.dk = operand(dk), p.dv = operand(dv);
  p.lse = const_cast<float*>(lse), p.dsum = workspace + mask_words(s);
  p.dr = dr, p.dvh = dv_hat;
  switch (s.d) {
    case 32: return launch_backward<32>(p, s, stream);
    case 64: return launch_backward<64>(p, s, stream);
    default: return launch_backward<128>(p, s, stream);
  }
}

}  // namespace vt::kernels::cuda
