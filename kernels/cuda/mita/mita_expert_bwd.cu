// The joint attention's backward per expert on tensor cores (bf16, sm_90; mma.sync m16n8k16 with f32
// accumulation, the tile products of flash_attention_device.cuh) for any m and k: nothing holds a whole expert's
// slots, so there is no slot limit. The FlashAttention-2 backward with gathered rows, in four launches:
//  1. row_dot: Dsum_n = dO_n·O_n (flash_attention_row_dot);
//  2. dq: a CTA takes 64 queries of one expert (the forward's tiling, gathered through `order`) and streams the
//     expert's slots [m shared | k routed] in tiles of 64: S = Q Kᵀ, dP = dO Vᵀ, P = exp2(S·c·log2 e − lse·log2 e),
//     dS = P∘(dP − Dsum), dQ += (c·dS) K with c the slot's logit scale; each dq row is written once;
//  3. routed dK/dV: a CTA takes up to 64 routed slots of one expert and walks the expert's queries in tiles of 64
//     with the keys as the MMA's rows (Sᵀ = K Qᵀ, dVᵀ += Pᵀ dO, dK += dSᵀ Q), so each (expert, slot) sum is
//     finished in one CTA: stored per (expert, slot) and summed per key in a fixed order (deterministic), or added
//     into per-key f32 accumulators with atomics; mita_routed_store writes dk and dv from either;
//  4. shared dR/dV̂: the same loop for 64 landmarks over the N queries (no gathers), written as f32; long
//     sequences split the queries over `shared_splits` CTAs whose partial sums a last kernel adds in order.
// P and dS are rounded to bf16 before their MMAs, as in FlashAttention-2 and the masked flash kernels.
#include "kernels/cuda/mita/mita_expert.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/flash_attention_device.cuh"
#include "kernels/cuda/mita/mita_tiles.cuh"

namespace vt::kernels::cuda {

using flash::bf16;
using mita_tiles::kRows;
using mita_tiles::kThreads;
using mita_tiles::load_rows;
using mita_tiles::RowSource;
using mita_tiles::source;

namespace {

constexpr int kCols = 64;  // slots per tile
constexpr float kLog2e = 1.4426950408889634f;

struct ExpertBwdParams {
  RowSource q, k, v, r, vh, dout;
  AttentionView dq;
  const float *lse, *dsum;  // [BH, N]
  const int32_t *expert_keys, *order, *offsets;
  float *routed_dk, *routed_dv;  // per_expert: [BH, m, k, D]; else [BH, N, D] accumulators (zeroed)
  float *dr, *dvh;               // [BH, m, D], or [BH, shared_splits, m, D] partial sums when shared_splits > 1
  int H, N, m, k_slots, msh, slot_tiles;  // msh: shared slots (m or 0); slot_tiles: ⌈k / 64⌉
  int shared_splits, shared_chunk;        // the shared slots' query ranges: chunks of shared_chunk queries
  bool per_expert;
  float shared_scale, routed_scale;  // logit scales (natural log domain)
};

template <int D>
constexpr int dq_smem_bytes() {  // Q, dO [64][LD]; K, V [2][64][LD]
  return 6 * kRows * (D + flash::kPad) * static_cast<int>(sizeof(bf16));
}

template <int D>
constexpr int dkdv_smem_bytes() {  // K, V [64][LD]; Q, dO [2][64][LD]; lse·log2 e and Dsum [2][64] f32
  return 6 * kRows * (D + flash::kPad) * static_cast<int>(sizeof(bf16)) + 4 * kRows * static_cast<int>(sizeof(float));
}

template <int D>
__global__ void __launch_bounds__(kThreads) expert_dq_kernel(const ExpertBwdParams p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // [64][LD]
  bf16* sdO = sQ + kRows * LD;                   // [64][LD]
  bf16* sK = sdO + kRows * LD;                   // [2][64][LD]
  bf16* sV = sK + 2 * kCols * LD;                // [2][64][LD]
  __shared__ const bf16* rows_q[kRows];
  __shared__ const bf16* rows_o[kRows];
  __shared__ const bf16* rows_k[2][kCols];
  __shared__ const bf16* rows_v[2][kCols];
  __shared__ int query_of[kRows];

  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H;
  int expert, q0, first, count;
  if (!mita_tiles::find_tile(p.offsets + bh * (p.m + 1), p.m, blockIdx.x, expert, q0, first, count)) return;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int32_t* ekeys = p.expert_keys + (bh * p.m + expert) * p.k_slots;
  const int S = p.msh + p.k_slots, tiles = (S + kCols - 1) / kCols;
  auto slot_rows = [&](int j) {  // slot tile j's row addresses into table j & 1 (a barrier must follow)
    if (tid < kCols) {
      const int slot = j * kCols + tid;
      const bf16 *kr = nullptr, *vr = nullptr;
      if (slot < p.msh) kr = p.r.row(b, h, slot), vr = p.vh.row(b, h, slot);
      else if (slot < S) {
        const int n = ekeys[slot - p.msh];
        kr = p.k.row(b, h, n), vr = p.v.row(b, h, n);
      }
      rows_k[j & 1][tid] = kr;
      rows_v[j & 1][tid] = vr;
    }
  };
  if (tid < kRows) {
    const int i = q0 + tid;
    const int n = i < count ? p.order[bh * p.N + first + i] : -1;
    query_of[tid] = n;
    rows_q[tid] = n >= 0 ? p.q.row(b, h, n) : nullptr;
    rows_o[tid] = n >= 0 ? p.dout.row(b, h, n) : nullptr;
  }
  slot_rows(0);
  __syncthreads();
  load_rows<D>(sQ, rows_q, p.q.data, tid);
  load_rows<D>(sdO, rows_o, p.q.data, tid);
  load_rows<D>(sK, rows_k[0], p.q.data, tid);
  load_rows<D>(sV, rows_v[0], p.q.data, tid);
  cp_async_commit();

  float lse2[2], dsum[2];  // rows g and g + 8 of this warp; rows without a query get P = 0
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int n = query_of[warp * 16 + g + 8 * r];
    lse2[r] = n >= 0 ? p.lse[bh * p.N + n] * kLog2e : INFINITY;
    dsum[r] = n >= 0 ? p.dsum[bh * p.N + n] : 0.f;
  }
  const float shared_log2 = p.shared_scale * kLog2e, routed_log2 = p.routed_scale * kLog2e;
  const bool active = q0 + warp * 16 < count;  // warps past the expert's queries skip their MMAs
  uint32_t qf[D / 16][4], of[D / 16][4];
  float dq[D / 8][4];
  zero(dq);
  for (int j = 0; j < tiles; ++j) {
    if (j + 1 < tiles) {
      slot_rows(j + 1);
      __syncthreads();
      const int nb = (j + 1) & 1;
      load_rows<D>(sK + nb * kCols * LD, rows_k[nb], p.q.data, tid);
      load_rows<D>(sV + nb * kCols * LD, rows_v[nb], p.q.data, tid);
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
    if (active) {
      const bf16* kt = sK + (j & 1) * kCols * LD;
      const bf16* vt = sV + (j & 1) * kCols * LD;
      float s[kCols / 8][4], dp[kCols / 8][4];
      zero(s);
      zero(dp);
      add_qkt_dovt<D, kCols>(s, dp, qf, of, kt, vt, LD, lane);
#pragma unroll
      for (int nt = 0; nt < kCols / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int slot = j * kCols + nt * 8 + 2 * t + (e & 1);
          const bool shared = slot < p.msh;
          const float pr = slot < S ? exp2f(s[nt][e] * (shared ? shared_log2 : routed_log2) - lse2[e / 2]) : 0.f;
          dp[nt][e] = pr * (dp[nt][e] - dsum[e / 2]) * (shared ? p.shared_scale : p.routed_scale);
        }
      add_pv<D, kCols>(dq, dp, kt, LD, lane);  // dQ += (c·dS) K
    }
    __syncthreads();  // the next iteration's prefetch overwrites this tile's buffers
  }
  bf16* dq_base = static_cast<bf16*>(const_cast<void*>(p.dq.data)) + b * p.dq.batch_stride + h * p.dq.head_stride;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int n = query_of[warp * 16 + g + 8 * r];
    if (n < 0) continue;
    bf16* dst = dq_base + n * p.dq.row_stride;
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
      *reinterpret_cast<__nv_bfloat162*>(dst + i * 8 + 2 * t) = __floats2bfloat162_rn(dq[i][2 * r], dq[i][2 * r + 1]);
  }
}

/// kShared: slots blockIdx.x·64 .. of the m landmarks against queries blockIdx.z·shared_chunk ..; else routed slot
/// tile blockIdx.x % slot_tiles of expert blockIdx.x / slot_tiles against the expert's queries.
template <int D, bool kShared>
__global__ void __launch_bounds__(kThreads) expert_dkdv_kernel(const ExpertBwdParams p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sK = reinterpret_cast<bf16*>(smem_raw);                // [64][LD]
  bf16* sV = sK + kCols * LD;                                  // [64][LD]
  bf16* sQ = sV + kCols * LD;                                  // [2][64][LD]
  bf16* sdO = sQ + 2 * kRows * LD;                             // [2][64][LD]
  float* sL = reinterpret_cast<float*>(sdO + 2 * kRows * LD);  // [2][64]: lse·log2 e (+inf: no query)
  float* sDs = sL + 2 * kRows;                                 // [2][64]: Dsum (0: no query)
  __shared__ const bf16* rows_q[2][kRows];
  __shared__ const bf16* rows_o[2][kRows];
  __shared__ const bf16* rows_k[kCols];
  __shared__ const bf16* rows_v[kCols];

  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H;
  int expert = 0, slot0, first = 0, count = p.N;
  if constexpr (kShared) {
    slot0 = blockIdx.x * kCols;
    first = blockIdx.z * p.shared_chunk;
    count = min(p.shared_chunk, p.N - first);
  } else {
    expert = blockIdx.x / p.slot_tiles;
    slot0 = (blockIdx.x % p.slot_tiles) * kCols;
    const int32_t* off = p.offsets + bh * (p.m + 1);
    first = off[expert];
    count = off[expert + 1] - first;
    if (count == 0) return;  // no query reached the expert: its slots get nothing (mita_routed_store skips it)
  }
  const int n_slots = min(kCols, (kShared ? p.m : p.k_slots) - slot0);
  const int32_t* ekeys = p.expert_keys + (bh * p.m + expert) * p.k_slots;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int q_tiles = (count + kRows - 1) / kRows;
  if (tid < kCols) {
    const bf16 *kr = nullptr, *vr = nullptr;
    if (tid < n_slots) {
      if constexpr (kShared) kr = p.r.row(b, h, slot0 + tid), vr = p.vh.row(b, h, slot0 + tid);
      else {
        const int n = ekeys[slot0 + tid];
        kr = p.k.row(b, h, n), vr = p.v.row(b, h, n);
      }
    }
    rows_k[tid] = kr;
    rows_v[tid] = vr;
  }
  auto query_rows = [&](int i, int buf) {  // query tile i's rows and statistics into buffer buf
    if (tid < kRows) {
      const int qi = i * kRows + tid;
      int n = -1;
      if (qi < count) n = kShared ? first + qi : p.order[bh * p.N + first + qi];
      rows_q[buf][tid] = n >= 0 ? p.q.row(b, h, n) : nullptr;
      rows_o[buf][tid] = n >= 0 ? p.dout.row(b, h, n) : nullptr;
      sL[buf * kRows + tid] = n >= 0 ? p.lse[bh * p.N + n] * kLog2e : INFINITY;
      sDs[buf * kRows + tid] = n >= 0 ? p.dsum[bh * p.N + n] : 0.f;
    }
  };
  query_rows(0, 0);
  __syncthreads();
  load_rows<D>(sK, rows_k, p.q.data, tid);
  load_rows<D>(sV, rows_v, p.q.data, tid);
  load_rows<D>(sQ, rows_q[0], p.q.data, tid);
  load_rows<D>(sdO, rows_o[0], p.q.data, tid);
  cp_async_commit();

  const float scale = kShared ? p.shared_scale : p.routed_scale, scale_log2 = scale * kLog2e;
  const bool active = warp * 16 < n_slots;  // warps past the slots skip their MMAs
  const bool slot_valid[2] = {warp * 16 + g < n_slots, warp * 16 + g + 8 < n_slots};
  float dk[D / 8][4], dv[D / 8][4];
  zero(dk);
  zero(dv);
  for (int i = 0; i < q_tiles; ++i) {
    if (i + 1 < q_tiles) {
      const int nb = (i + 1) & 1;
      query_rows(i + 1, nb);
      __syncthreads();
      load_rows<D>(sQ + nb * kRows * LD, rows_q[nb], p.q.data, tid);
      load_rows<D>(sdO + nb * kRows * LD, rows_o[nb], p.q.data, tid);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (active) {
      const int buf = i & 1;
      const bf16* qt = sQ + buf * kRows * LD;
      const bf16* dot = sdO + buf * kRows * LD;
      const float* lt = sL + buf * kRows;
      const float* dst = sDs + buf * kRows;
      float st[kRows / 8][4], dpt[kRows / 8][4];
      zero(st);
      zero(dpt);
      const int valid_queries = count - i * kRows;  // an expert's last tile is often mostly empty
      add_kqt_vdot<D, kRows>(st, dpt, sK, sV, qt, dot, LD, warp * 16, lane, valid_queries);
#pragma unroll
      for (int j = 0; j < kRows / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = j * 8 + 2 * t + (e & 1);
          const float pr = slot_valid[e / 2] ? exp2f(st[j][e] * scale_log2 - lt[col]) : 0.f;
          st[j][e] = pr;
          dpt[j][e] = pr * (dpt[j][e] - dst[col]);
        }
      add_dv_dk<D, kRows>(dv, dk, st, dpt, dot, qt, LD, lane, valid_queries);  // dV += Pᵀ dO, dK += dSᵀ Q
    }
    __syncthreads();  // the next iteration's prefetch overwrites this tile's buffers
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (!slot_valid[r]) continue;
    const int slot = slot0 + warp * 16 + g + 8 * r;
    float *gk, *gv;
    if constexpr (kShared) {
      const int64_t at = ((bh * p.shared_splits + blockIdx.z) * p.m + slot) * D;
      gk = p.dr + at, gv = p.dvh + at;
    } else if (p.per_expert) {
      const int64_t at = ((bh * p.m + expert) * p.k_slots + slot) * D;
      gk = p.routed_dk + at, gv = p.routed_dv + at;
    } else {
      const int64_t at = (bh * p.N + ekeys[slot]) * D;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        atomic_add2(p.routed_dk + at + j * 8 + 2 * t, dk[j][2 * r] * scale, dk[j][2 * r + 1] * scale);
        atomic_add2(p.routed_dv + at + j * 8 + 2 * t, dv[j][2 * r], dv[j][2 * r + 1]);
      }
      continue;
    }
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      *reinterpret_cast<float2*>(gk + j * 8 + 2 * t) = make_float2(dk[j][2 * r] * scale, dk[j][2 * r + 1] * scale);
      *reinterpret_cast<float2*>(gv + j * 8 + 2 * t) = make_float2(dv[j][2 * r], dv[j][2 * r + 1]);
    }
  }
}

/// dr, dv̂ [rows, D] = the sum over the splits of the partial sums [BH][splits][m][D], in split order.
__global__ void shared_split_sum_kernel(float* __restrict__ dr, float* __restrict__ dvh,
                                        const float* __restrict__ dr_part, const float* __restrict__ dvh_part,
                                        int64_t m_d, int splits, int64_t total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t bh = i / m_d, j = i % m_d;
  float a = 0.f, c = 0.f;
  for (int z = 0; z < splits; ++z) {
    const int64_t at = (bh * splits + z) * m_d + j;
    a += dr_part[at];
    c += dvh_part[at];
  }
  dr[i] = a;
  dvh[i] = c;
}

/// The shared slots' query ranges: enough CTAs for about two waves, each range at least 256 queries (4 tiles),
/// every range non-empty.
struct SharedSplits {
  int splits = 1, chunk = 0;
};

SharedSplits shared_splits(const MitaShape& s) {
  const int64_t ctas = s.B * s.H * ((s.m + kCols - 1) / kCols);
  const int64_t want =
      std::clamp<int64_t>((2 * device::sm_count() + ctas - 1) / ctas, 1, std::max<int64_t>(1, s.N / (4 * kRows)));
  const int64_t chunk = ((s.N + want - 1) / want + kRows - 1) / kRows * kRows;
  return {static_cast<int>((s.N + chunk - 1) / chunk), static_cast<int>(chunk)};
}

template <typename Kernel>
void launch(Kernel kernel, dim3 grid, int smem, const ExpertBwdParams& p, cudaStream_t stream) {
  VT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<grid, kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK(cudaGetLastError());
}

int64_t round4(int64_t n) { return (n + 3) / 4 * 4; }

}  // namespace

bool mita_expert_supported(const MitaShape& s) {
  return (s.d == 32 || s.d == 64 || s.d == 128) && s.m >= 1 && s.k >= 1 && s.k <= s.N && s.B * s.H <= 65535 &&
         s.N < (int64_t{1} << 30) && (s.N + kRows - 1) / kRows + s.m < (int64_t{1} << 31) &&
         s.m * ((s.k + kCols - 1) / kCols) < (int64_t{1} << 31);
}

int64_t mita_expert_backward_workspace(const MitaShape& s, bool deterministic) {
  const int64_t BH = s.B * s.H;
  const int splits = s.shared ? shared_splits(s).splits : 1;
  return round4(BH * s.N) + 2 * (deterministic ? BH * s.m * s.k * s.d : BH * s.N * s.d) +
         (splits > 1 ? 2 * BH * splits * s.m * s.d : 0);
}

void mita_expert_backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv, float* dr,
                          float* dv_hat, const AttentionView& dout, const AttentionView& q, const AttentionView& k,
                          const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                          const AttentionView& out, const float* lse, const MitaRoutingArrays& routing,
                          const MitaShape& s, bool deterministic, float* workspace, cudaStream_t stream) {
  VT_CHECK(mita_expert_supported(s), "[mita_attention] the per-expert backward does not take B·H = ", s.B * s.H,
           ", N = ", s.N, ", m = ", s.m, ", k = ", s.k, ", d = ", s.d);
  for (const AttentionView* view : {&dq, &dk, &dv, &dout, &q, &k, &v, &out})
    VT_CHECK(flash_attention_aligned(*view), "[mita_attention] operands must be 16-byte aligned");
  if (s.shared)
    for (const AttentionView* view : {&r, &v_hat})
      VT_CHECK(flash_attention_aligned(*view), "[mita_attention] operands must be 16-byte aligned");
  const int64_t BH = s.B * s.H;
  if (BH * s.N == 0) return;
  const int64_t routed = deterministic ? BH * s.m * s.k * s.d : BH * s.N * s.d;
  float* dsum = workspace;
  float* routed_dk = workspace + round4(BH * s.N);
  float* routed_dv = routed_dk + routed;
  const SharedSplits part = s.shared ? shared_splits(s) : SharedSplits{1, static_cast<int>(s.N)};
  const int splits = part.splits;
  float* dr_part = splits > 1 ? routed_dv + routed : dr;
  float* dvh_part = splits > 1 ? dr_part + BH * splits * s.m * s.d : dv_hat;
  if (!deterministic) VT_CUDA_CHECK(cudaMemsetAsync(routed_dk, 0, sizeof(float) * 2 * routed, stream));
  const AttentionShape as{s.B, s.H, s.N, s.d, s.scale};
  flash_attention_row_dot(dsum, dout, out, as, stream);

  ExpertBwdParams p{};
  p.q = source(q), p.k = source(k), p.v = source(v), p.dout = source(dout);
  p.r = s.shared ? source(r) : source(q), p.vh = s.shared ? source(v_hat) : source(q);
  p.dq = dq, p.lse = lse, p.dsum = dsum;
  p.expert_keys = routing.expert_keys, p.order = routing.order, p.offsets = routing.offsets;
  p.routed_dk = routed_dk, p.routed_dv = routed_dv, p.dr = dr_part, p.dvh = dvh_part;
  p.shared_splits = splits, p.shared_chunk = part.chunk;
  p.H = static_cast<int>(s.H), p.N = static_cast<int>(s.N), p.m = static_cast<int>(s.m);
  p.k_slots = static_cast<int>(s.k), p.msh = s.shared ? p.m : 0;
  p.slot_tiles = static_cast<int>((s.k + kCols - 1) / kCols);
  p.per_expert = deterministic;
  p.shared_scale = s.shared_scale, p.routed_scale = s.scale;
  const unsigned bh = static_cast<unsigned>(BH);
  auto run = [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    launch(expert_dq_kernel<D>, dim3(static_cast<unsigned>((s.N + kRows - 1) / kRows + s.m), bh), dq_smem_bytes<D>(), p,
           stream);
    launch(expert_dkdv_kernel<D, false>, dim3(static_cast<unsigned>(s.m * p.slot_tiles), bh), dkdv_smem_bytes<D>(), p,
           stream);
    if (s.shared)
      launch(expert_dkdv_kernel<D, true>,
             dim3(static_cast<unsigned>((s.m + kCols - 1) / kCols), bh, static_cast<unsigned>(splits)),
             dkdv_smem_bytes<D>(), p, stream);
  };
  switch (s.d) {
    case 32: run(std::integral_constant<int, 32>{}); break;
    case 64: run(std::integral_constant<int, 64>{}); break;
    default: run(std::integral_constant<int, 128>{}); break;
  }
  if (splits > 1) {
    const int64_t total = BH * s.m * s.d;
    shared_split_sum_kernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(
        dr, dv_hat, dr_part, dvh_part, s.m * s.d, splits, total);
    VT_CUDA_CHECK(cudaGetLastError());
  }
  mita_routed_store(DType::bf16, dk, dv, routed_dk, routed_dv, deterministic, routing, s, stream);
}

}  // namespace vt::kernels::cuda
