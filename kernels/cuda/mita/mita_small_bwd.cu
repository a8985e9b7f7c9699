// mita_small.h's backward: every gradient of the core of one (batch, head) per CTA.
#include "kernels/cuda/check.h"
#include "kernels/cuda/mita/mita_small.h"
#include "kernels/cuda/mita/mita_small_core.cuh"

namespace vt::kernels::cuda {

namespace {

using namespace mita_small_core;

struct BwdParams {
  Rows q, k, v, r, v_hat, out, dout, dq, dk, dv;
  const float *lse, *lse_shared;
  const int32_t *expert_keys, *order, *offsets;
  PoolBins pool;
  float *dr, *scratch;  // dr [B, m, H·D]; scratch: scratch_floats per (b, h)
  int H, N, m, topk;
  float scale, shared_scale, scale_log2, shared_scale_log2;
};

/// dst[0..3] += v atomically (global, 16-byte aligned): one vector reduction on sm_90+.
__device__ __forceinline__ void atomic_add4(float* dst, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(dst), v);
#else
  atomicAdd(dst, v.x), atomicAdd(dst + 1, v.y), atomicAdd(dst + 2, v.z), atomicAdd(dst + 3, v.w);
#endif
}

/// The transpose of one 8×8 bf16 matrix held in fragment layout (lane l: row l / 4, columns 2(l % 4), +1), in the
/// same layout, without shared memory.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

/// Adds this lane's part of one row of two side-by-side C tiles (columns 2t, 2t + 1 of the first: lo; 8 + 2t,
/// 9 + 2t of the second: hi) into row[0..15] (global) with one 16-byte reduction per lane: lanes t and t ^ 1 swap
/// halves so that each holds four consecutive columns. Called by the whole warp; `active` lanes add.
__device__ __forceinline__ void atomic_add_row(float* row, float lo0, float lo1, float hi0, float hi1, bool active,
                                               int lane) {
  const int t = lane & 3;
  const bool even = (t & 1) == 0;
  const float r0 = __shfl_xor_sync(0xffffffffu, even ? hi0 : lo0, 1);
  const float r1 = __shfl_xor_sync(0xffffffffu, even ? hi1 : lo1, 1);
  if (!active) return;
  if (even) atomic_add4(row + 2 * t, make_float4(lo0, lo1, r0, r1));
  else atomic_add4(row + 8 + 2 * (t - 1), make_float4(r0, r1, hi0, hi1));
}

/// Tᵀ for the 32 slots of one item, as the A fragments of two 16-slot × 16-query tiles (rounded to bf16 and
/// transposed in registers): dst[mt · 32 + lane] holds this lane's four registers of tile mt, so that the keys' pass
/// reads each fragment back with one 16-byte load per lane.
__device__ __forceinline__ void store_slot_tiles(uint4* dst, const float (&T)[4][4], int lane) {
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
    dst[mt * 32 + lane] = make_uint4(movmatrix_trans(flash::pack_bf16(T[2 * mt][0], T[2 * mt][1])),
                                     movmatrix_trans(flash::pack_bf16(T[2 * mt + 1][0], T[2 * mt + 1][1])),
                                     movmatrix_trans(flash::pack_bf16(T[2 * mt][2], T[2 * mt][3])),
                                     movmatrix_trans(flash::pack_bf16(T[2 * mt + 1][2], T[2 * mt + 1][3])));
}

__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(flash::smem_addr(p)));
}

template <int D>
__global__ void __launch_bounds__(kBwdWarps * 32, 2) small_backward_kernel(BwdParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kThreads = kBwdWarps * 32, ld = D + flash::kPad, kChunks = D / 8;
  const int N = p.N, m = p.m, topk = p.topk, np = padded_rows(N), lp = np + flash::kPad;
  const BwdLayout L(N, D, m);
  bf16 *Ks = reinterpret_cast<bf16*>(smem + L.k), *Vs = reinterpret_cast<bf16*>(smem + L.v),
       *Rs = reinterpret_cast<bf16*>(smem + L.r), *VHs = reinterpret_cast<bf16*>(smem + L.v_hat);
  float* dVH = p.scratch + static_cast<int64_t>(blockIdx.x) * scratch_floats(N, D, m);  // global, L2-resident
  // Each query's dS and P over the shared slots ([N][kSlots] bf16, rows by token): their sums over all queries go to
  // dR and dV̂ after the experts' pass, instead of one reduction per item.
  bf16* dS_shared = reinterpret_cast<bf16*>(dVH + m * D);
  bf16* P_shared = dS_shared + N * kSlots;
  // Each item's routed dS and P, transposed, as MMA fragments ([item][dS, P][2 tiles][32 lanes]): the keys' pass
  // sums them into dK and dV in shared memory, each warp owning a column slice, so that no float reductions are
  // needed for the routed slots.
  uint4* routed_tiles = reinterpret_cast<uint4*>(P_shared + N * kSlots);
  const int64_t C = static_cast<int64_t>(p.H) * D;
  float* dR = p.dr + static_cast<int64_t>(blockIdx.x / p.H) * m * C + (blockIdx.x % p.H) * D;  // rows C apart
  int *ek = reinterpret_cast<int*>(smem + L.keys), *order = reinterpret_cast<int*>(smem + L.order),
      *off = reinterpret_cast<int*>(smem + L.offsets), *items = reinterpret_cast<int*>(smem + L.items);
  float *lse_s = reinterpret_cast<float*>(smem + L.misc), *delta_s = lse_s + kSlots;
  int* n_items = reinterpret_cast<int*>(delta_s + kSlots);
  float *row_delta = reinterpret_cast<float*>(smem + L.row_terms), *row_lse = row_delta + np;
  unsigned char* scratch = smem + L.scratch;
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;

  load_rows<D, kThreads>(Ks, p.k, b, h, N, np + 1, tid);
  load_rows<D, kThreads>(Vs, p.v, b, h, N, np + 1, tid);
  load_rows<D, kThreads>(Rs, p.r, b, h, m, kSlots, tid);
  load_rows<D, kThreads>(VHs, p.v_hat, b, h, m, kSlots, tid);
  flash::cp_async_commit();
  for (int i = tid; i < m * D / 4; i += kThreads) reinterpret_cast<float4*>(dVH)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int i = tid; i < m * D; i += kThreads) dR[(i / D) * C + i % D] = 0.f;
  for (int i = tid; i < m * kSlots; i += kThreads) {
    const int j = i / kSlots, s = i % kSlots;
    ek[i] = s < topk ? p.expert_keys[(static_cast<int64_t>(bh) * m + j) * topk + s] : np;
  }
  for (int i = tid; i < N; i += kThreads) order[i] = p.order[static_cast<int64_t>(bh) * N + i];
  for (int i = tid; i <= m; i += kThreads) off[i] = p.offsets[bh * (m + 1) + i];
  if (tid < kSlots) lse_s[tid] = tid < m ? p.lse_shared[bh * m + tid] * kLog2e : 0.f;
  // Each query's Δ_n = dO_n·O_n and log-sum-exp, once: 16 rows a warp, lanes r and r + 16 take the halves of row r.
  constexpr int kHalf = D / 16;  // 16-byte chunks in half a row
  const int my_row = lane & 15, c0 = (lane >> 4) * (D / 2);
  for (int base = warp * 16; base < N; base += kBwdWarps * 16) {
    const int n = base + my_row;
    float delta = 0.f;
    if (n < N)
#pragma unroll
      for (int c = 0; c < kHalf; ++c) {
        const uint4 o8 = *reinterpret_cast<const uint4*>(p.out.row(b, h, n) + c0 + 8 * c);
        const uint4 d8 = *reinterpret_cast<const uint4*>(p.dout.row(b, h, n) + c0 + 8 * c);
        const __nv_bfloat162* o2 = reinterpret_cast<const __nv_bfloat162*>(&o8);
        const __nv_bfloat162* d2 = reinterpret_cast<const __nv_bfloat162*>(&d8);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 x = __bfloat1622float2(o2[e]), y = __bfloat1622float2(d2[e]);
          delta += x.x * y.x + x.y * y.y;
        }
      }
    delta += __shfl_xor_sync(0xffffffffu, delta, 16);
    if (lane < 16 && n < N) {
      row_delta[n] = delta;
      row_lse[n] = p.lse[static_cast<int64_t>(bh) * N + n] * kLog2e;
    }
  }
  flash::cp_async_wait<0>();
  __syncthreads();
  if (warp == 0) list_items(off, m, items, n_items, lane);
  __syncthreads();

  // The joint softmax's backward, one warp per (expert, 16 queries).
  {
    bf16* Qw = reinterpret_cast<bf16*>(scratch) + warp * 2 * 16 * ld;
    bf16* dOw = Qw + 16 * ld;
    for (int i = warp; i < *n_items; i += kBwdWarps) {
      const Item it(items, off, i);
      const int* keys = ek + it.expert * kSlots;
      {  // the item's Q and dO rows: lane l copies half (l >> 4) of row l & 15
        const bool ok = my_row < it.count;
        const int n = ok ? order[it.first + my_row] : 0;
#pragma unroll
        for (int c = 0; c < kHalf; ++c) {
          flash::cp_async16(Qw + my_row * ld + c0 + 8 * c, p.q.row(b, h, n) + c0 + 8 * c, ok);
          flash::cp_async16(dOw + my_row * ld + c0 + 8 * c, p.dout.row(b, h, n) + c0 + 8 * c, ok);
        }
        flash::cp_async_commit();
        flash::cp_async_wait<0>();
      }
      __syncwarp();
      const bool rv[2] = {g < it.count, g + 8 < it.count};
      float dl[2], l2[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int n = rv[half] ? order[it.first + g + 8 * half] : 0;
        dl[half] = rv[half] ? row_delta[n] : 0.f;
        l2[half] = rv[half] ? row_lse[n] : 0.f;
      }

      uint32_t qa[D / 16][4], da[D / 16][4];
#pragma unroll
      for (int kc = 0; kc < D / 16; ++kc) {
        flash::ldmatrix_x4(qa[kc], flash::a_rows(Qw, ld, 0, kc * 16, lane));
        flash::ldmatrix_x4(da[kc], flash::a_rows(dOw, ld, 0, kc * 16, lane));
      }
      float pr[4][4] = {}, ps[4][4] = {}, dsr[4][4] = {}, dss[4][4] = {};
      slot_scores<D>(pr, ps, qa, Ks, Rs, keys, lane);     // logits, made probabilities below
      slot_scores<D>(dsr, dss, da, Vs, VHs, keys, lane);  // dP, made dS below
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int col = nt * 8 + 2 * t + (x & 1), half = x >> 1;
          const float a = rv[half] && col < topk ? exp2f(pr[nt][x] * p.scale_log2 - l2[half]) : 0.f;
          const float c = rv[half] && col < m ? exp2f(ps[nt][x] * p.shared_scale_log2 - l2[half]) : 0.f;
          dsr[nt][x] = a * (dsr[nt][x] - dl[half]) * p.scale;
          dss[nt][x] = c * (dss[nt][x] - dl[half]) * p.shared_scale;
          pr[nt][x] = a, ps[nt][x] = c;
        }
      // The routed slots' dS and P for the keys' pass (dK_I += dS_routedᵀ·Q, dV_I += P_routedᵀ·dO); the shared
      // slots' rows kept for their sums over all queries.
      store_slot_tiles(routed_tiles + i * 128, dsr, lane);
      store_slot_tiles(routed_tiles + i * 128 + 64, pr, lane);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        if (!rv[half]) continue;
        const int n = order[it.first + g + 8 * half];
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          store_pair(P_shared + n * kSlots + nt * 8 + 2 * t, ps[nt][2 * half], ps[nt][2 * half + 1]);
          store_pair(dS_shared + n * kSlots + nt * 8 + 2 * t, dss[nt][2 * half], dss[nt][2 * half + 1]);
        }
      }
      // dq = dS_routed·K_I + dS_shared·R, written once per query.
      float dq[D / 8][4] = {};
      slot_values<D>(dq, dsr, dss, Ks, Rs, keys, lane);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        if (!rv[half]) continue;
        bf16* dst = p.dq.out_row(b, h, order[it.first + g + 8 * half]);
#pragma unroll
        for (int nt = 0; nt < D / 8; ++nt) store_pair(dst + nt * 8 + 2 * t, dq[nt][2 * half], dq[nt][2 * half + 1]);
      }
      __syncwarp();
    }
  }
  __syncthreads();

  // The shared slots' sums over all queries: dR += dS_sharedᵀ·Q, dV̂ += P_sharedᵀ·dO. Each warp sums 16 tokens at a time
  // into registers, staging their X rows and slot rows in its part of the scratch region, and adds its total once.
  {
    constexpr int kSld = kSlots + flash::kPad;
    bf16* Xw = reinterpret_cast<bf16*>(scratch) + warp * 2 * 16 * ld;
    bf16* Sw = Xw + 16 * ld;  // [16 tokens][kSld]
    for (int pass = 0; pass < 2; ++pass) {
      const bf16* S = pass == 0 ? dS_shared : P_shared;
      const Rows& X = pass == 0 ? p.q : p.dout;
      float acc[2][D / 8][4] = {};
      for (int n0 = warp * 16; n0 < N; n0 += kBwdWarps * 16) {
        const int n = n0 + my_row;
#pragma unroll
        for (int c = 0; c < kHalf; ++c)
          flash::cp_async16(Xw + my_row * ld + c0 + 8 * c, X.row(b, h, n < N ? n : 0) + c0 + 8 * c, n < N);
#pragma unroll
        for (int u = lane; u < 16 * kSlots / 8; u += 32) {
          const int row = u / (kSlots / 8), col = (u % (kSlots / 8)) * 8;
          flash::cp_async16(Sw + row * kSld + col, S + (n0 + row < N ? n0 + row : 0) * kSlots + col, n0 + row < N);
        }
        flash::cp_async_commit();
        flash::cp_async_wait<0>();
        __syncwarp();
        uint32_t xb[D / 16][4];
#pragma unroll
        for (int c = 0; c < D / 16; ++c) flash::ldmatrix_x4_trans(xb[c], flash::b_rows_kn(Xw, ld, 0, c * 16, lane));
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          uint32_t a[4];
          flash::ldmatrix_x4_trans(a, flash::a_rows_transposed(Sw, kSld, mt * 16, 0, lane));
#pragma unroll
          for (int c = 0; c < D / 16; ++c) {
            flash::mma_bf16(acc[mt][2 * c], a, xb[c][0], xb[c][1]);
            flash::mma_bf16(acc[mt][2 * c + 1], a, xb[c][2], xb[c][3]);
          }
        }
        __syncwarp();
      }
      if (warp * 16 >= N) continue;
      float* dst = pass == 0 ? dR : dVH;
      const int64_t stride = pass == 0 ? C : D;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int c = 0; c < D / 16; ++c)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int j = mt * 16 + g + 8 * half;
            atomic_add_row(j < m ? dst + j * stride + c * 16 : dst, acc[mt][2 * c][2 * half],
                           acc[mt][2 * c][2 * half + 1], acc[mt][2 * c + 1][2 * half], acc[mt][2 * c + 1][2 * half + 1],
                           j < m, lane);
          }
    }
  }
  __syncthreads();

  // V̂ = softmax(scale·R·Kᵀ)·V backward: dP = dV̂·Vᵀ, dS = P∘(dP − dV̂·V̂)·scale; dR += dS·K, dK += dSᵀ·R,
  // dV += Pᵀ·dV̂.
  bf16 *Prk = reinterpret_cast<bf16*>(scratch), *dSrk = Prk + kSlots * lp, *dVHb = dSrk + kSlots * lp;
  for (int i = tid; i < kSlots * D; i += kThreads) {
    const int j = i / D, c = i % D;
    dVHb[j * ld + c] = __float2bfloat16(j < m ? __ldcg(dVH + j * D + c) : 0.f);
  }
  for (int j = warp; j < kSlots; j += kBwdWarps) {
    float x = 0.f;
    if (j < m)
      for (int c = lane; c < D; c += 32) x += __ldcg(dVH + j * D + c) * __bfloat162float(VHs[j * ld + c]);
    x = warp_sum(x);
    if (lane == 0) delta_s[j] = x;
  }
  __syncthreads();
  // Warp w takes landmark tile w % 2 (kBwdWarps is even) and every (kBwdWarps / 2)-th key tile, summing its share of
  // dR in registers and adding it once.
  float dr_lo[D / 16][4] = {}, dr_hi[D / 16][4] = {};
  const int m_tile = (warp & 1) * 16;
  for (int item = warp; item < 2 * (np / 16); item += kBwdWarps) {
    const int m0 = m_tile, n0 = (item >> 1) * 16;
    float s[2][4] = {}, dp[2][4] = {};
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
      uint32_t a[4], bf[4];
      flash::ldmatrix_x4(a, flash::a_rows(Rs, ld, m0, kc * 16, lane));
      flash::ldmatrix_x4(bf, flash::b_rows_nk(Ks, ld, n0, kc * 16, lane));
      flash::mma_bf16(s[0], a, bf[0], bf[1]);
      flash::mma_bf16(s[1], a, bf[2], bf[3]);
      flash::ldmatrix_x4(a, flash::a_rows(dVHb, ld, m0, kc * 16, lane));
      flash::ldmatrix_x4(bf, flash::b_rows_nk(Vs, ld, n0, kc * 16, lane));
      flash::mma_bf16(dp[0], a, bf[0], bf[1]);
      flash::mma_bf16(dp[1], a, bf[2], bf[3]);
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int j = m0 + g + 8 * (x >> 1), key = n0 + nt * 8 + 2 * t + (x & 1);
        const float pv = j < m && key < N ? exp2f(s[nt][x] * p.scale_log2 - lse_s[j]) : 0.f;
        dp[nt][x] = pv * (dp[nt][x] - delta_s[j]) * p.scale;
        s[nt][x] = pv;
      }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int col = n0 + nt * 8 + 2 * t;
      store_pair(Prk + (m0 + g) * lp + col, s[nt][0], s[nt][1]);
      store_pair(Prk + (m0 + g + 8) * lp + col, s[nt][2], s[nt][3]);
      store_pair(dSrk + (m0 + g) * lp + col, dp[nt][0], dp[nt][1]);
      store_pair(dSrk + (m0 + g + 8) * lp + col, dp[nt][2], dp[nt][3]);
    }
    uint32_t a[4];
    flash::a_fragment(a, dp[0], dp[1]);
#pragma unroll
    for (int c = 0; c < D / 16; ++c) {
      uint32_t bf[4];
      flash::ldmatrix_x4_trans(bf, flash::b_rows_kn(Ks, ld, n0, c * 16, lane));
      flash::mma_bf16(dr_lo[c], a, bf[0], bf[1]);
      flash::mma_bf16(dr_hi[c], a, bf[2], bf[3]);
    }
  }
  if (warp < 2 * (np / 16))
#pragma unroll
    for (int c = 0; c < D / 16; ++c)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int j = m_tile + g + 8 * half;
        atomic_add_row(j < m ? dR + j * C + c * 16 : dR, dr_lo[c][2 * half], dr_lo[c][2 * half + 1], dr_hi[c][2 * half],
                       dr_hi[c][2 * half + 1], j < m, lane);
      }
  __syncthreads();
  // dK and dV, half of the columns at a time, in f32 in shared memory where K and V were (dead since V̂'s
  // backward): first the routed slots' sums, each warp owning one 8-column slice of dK or dV and walking every
  // item in order (an expert's keys are distinct, so no two lanes touch one element and no atomics are needed),
  // then per 16 keys V̂'s share added and the bf16 dk, dv stored.
  constexpr int kHalfD = D / 2, acc_ld = kHalfD + 4, kJobs = D / 8;
  float* acc = reinterpret_cast<float*>(smem + L.k);     // [dK, dV][np][acc_ld]
  bf16* stage = dVHb + kSlots * ld + warp * 2 * 16 * 8;  // this warp's two [16 queries][8 columns] buffers
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = tid; i < 2 * np * acc_ld / 4; i += kThreads)
      reinterpret_cast<float4*>(acc)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    if (warp < kJobs) {
      const int which = warp / (kJobs / 2), slice = warp % (kJobs / 2);  // which: 0 dK (dS, Q), 1 dV (P, dO)
      const int col = pass * kHalfD + slice * 8;
      const Rows& X = which == 0 ? p.q : p.dout;
      float* dst = acc + which * np * acc_ld + slice * 8 + 2 * t;
      const int count = *n_items;
      auto fetch = [&](int i, uint4(&a)[2]) {  // item i's X rows (async, into buffer i & 1) and T fragments
        if (lane < 16) {
          const Item it(items, off, i);
          const bool ok = lane < it.count;
          flash::cp_async16(stage + (i & 1) * 128 + lane * 8, X.row(b, h, ok ? order[it.first + lane] : 0) + col, ok);
        }
        flash::cp_async_commit();
        a[0] = __ldcg(routed_tiles + i * 128 + which * 64 + lane);
        a[1] = topk > 16 ? __ldcg(routed_tiles + i * 128 + which * 64 + 32 + lane) : make_uint4(0, 0, 0, 0);
      };
      uint4 next[2];
      if (count > 0) fetch(0, next);
      for (int i = 0; i < count; ++i) {
        const uint4 cur[2] = {next[0], next[1]};
        if (i + 1 < count) fetch(i + 1, next);
        else flash::cp_async_commit();
        flash::cp_async_wait<1>();
        __syncwarp();
        uint32_t xb[2];
        ldmatrix_x2_trans(xb, stage + (i & 1) * 128 + (lane & 15) * 8);
        __syncwarp();
        const int* keys = ek + (items[i] >> 16) * kSlots;
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          if (mt * 16 >= topk) break;
          const uint32_t a[4] = {cur[mt].x, cur[mt].y, cur[mt].z, cur[mt].w};
          float c[4] = {};
          flash::mma_bf16(c, a, xb[0], xb[1]);
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int slot = mt * 16 + g + 8 * half;
            if (slot >= topk) continue;
            float2* e = reinterpret_cast<float2*>(dst + keys[slot] * acc_ld);
            float2 v = *e;
            v.x += c[2 * half], v.y += c[2 * half + 1];
            *e = v;
          }
        }
      }
      flash::cp_async_wait<0>();
    }
    __syncthreads();
    for (int kt = warp; kt < np / 16; kt += kBwdWarps) {
      const int n0 = kt * 16;
      uint32_t ads[2][4], ap[2][4];
#pragma unroll
      for (int kc = 0; kc < 2; ++kc) {
        flash::ldmatrix_x4_trans(ads[kc], flash::a_rows_transposed(dSrk, lp, n0, kc * 16, lane));
        flash::ldmatrix_x4_trans(ap[kc], flash::a_rows_transposed(Prk, lp, n0, kc * 16, lane));
      }
#pragma unroll
      for (int c0 = 0; c0 < kHalfD; c0 += 16) {
        const int gc = pass * kHalfD + c0;  // the column in dk, dv
        float klo[4] = {}, khi[4] = {}, vlo[4] = {}, vhi[4] = {};
#pragma unroll
        for (int kc = 0; kc < 2; ++kc) {
          uint32_t bf[4];
          flash::ldmatrix_x4_trans(bf, flash::b_rows_kn(Rs, ld, kc * 16, gc, lane));
          flash::mma_bf16(klo, ads[kc], bf[0], bf[1]);
          flash::mma_bf16(khi, ads[kc], bf[2], bf[3]);
          flash::ldmatrix_x4_trans(bf, flash::b_rows_kn(dVHb, ld, kc * 16, gc, lane));
          flash::mma_bf16(vlo, ap[kc], bf[0], bf[1]);
          flash::mma_bf16(vhi, ap[kc], bf[2], bf[3]);
        }
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int key = n0 + g + 8 * half;
          if (key >= N) continue;
          const float* rk = acc + key * acc_ld + c0 + 2 * t;
          const float* rv = rk + np * acc_ld;
          bf16 *k = p.dk.out_row(b, h, key) + gc + 2 * t, *v = p.dv.out_row(b, h, key) + gc + 2 * t;
          store_pair(k, rk[0] + klo[2 * half], rk[1] + klo[2 * half + 1]);
          store_pair(k + 8, rk[8] + khi[2 * half], rk[9] + khi[2 * half + 1]);
          store_pair(v, rv[0] + vlo[2 * half], rv[1] + vlo[2 * half + 1]);
          store_pair(v + 8, rv[8] + vhi[2 * half], rv[9] + vhi[2 * half + 1]);
        }
      }
    }
    __syncthreads();
  }
  // The pooling's backward: each pooled token's dq += Σ over the bins that hold it of bf16(dR_j) / |bin j|, rounded
  // to bf16 and added, as landmark_pool_backward and the separate add would. The bins' sizes, each grid row's and
  // column's span of bins and then the terms go to shared memory first (the scratch region is free once the loop
  // above is done), so that the token loop runs no integer division.
  const PoolBins& pb = p.pool;
  const bool grid2d = pb.grid > 0;
  const int cols = grid2d ? pb.pool : m, in_x = grid2d ? pb.grid : pb.L, in_y = grid2d ? pb.grid : 1;
  float* terms = reinterpret_cast<float*>(scratch);         // [m][D]
  float* inv_size = terms + m * D;                          // [m]
  int* span_x = reinterpret_cast<int*>(inv_size + kSlots);  // [in_x]: first bin | last bin << 16, along a row
  int* span_y = span_x + in_x;                              // [in_y]: the same down a column
  // Bins c (of `out` along an axis of `in` tokens) hold x when start(c) ≤ x < end(c); both ends grow with c, so
  // they form one run, found among the candidates ⌊x·out/in⌋ − 1 .. ⌊(x + 1)·out/in⌋.
  auto span = [](int x, int in, int out) {
    const int c0 = max(0, (x * out) / in - 1), c1 = min(out - 1, ((x + 1) * out) / in);
    int lo = c1 + 1, hi = c0 - 1;
    for (int c = c0; c <= c1; ++c)
      if (PoolBins::start(c, in, out) <= x && x < PoolBins::end(c, in, out)) lo = min(lo, c), hi = max(hi, c);
    return lo | (hi << 16);
  };
  for (int x = tid; x < in_x; x += kThreads) span_x[x] = span(x, in_x, cols);
  for (int y = tid; y < in_y; y += kThreads) span_y[y] = grid2d ? span(y, in_y, cols) : 0;
  for (int j = tid; j < m; j += kThreads) {
    int y0, y1, x0, x1, width;
    pb.bin(j, y0, y1, x0, x1, width);
    inv_size[j] = 1.0f / static_cast<float>((y1 - y0) * (x1 - x0));
  }
  __syncthreads();
  for (int i = tid; i < m * D; i += kThreads)
    terms[i] = __bfloat162float(__float2bfloat16(__ldcg(dR + (i / D) * C + i % D))) * inv_size[i / D];
  __syncthreads();
  // Four chunks a thread at a time: their dq loads go out together.
  constexpr int kBatch = 4;
  const int n_chunks = pb.L * kChunks;
  for (int base = 0; base < n_chunks; base += kBatch * kThreads) {
    uint4 old[kBatch] = {};
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int c = base + u * kThreads + tid;
      if (c < n_chunks)
        old[u] = __ldcg(reinterpret_cast<const uint4*>(p.dq.row(b, h, pb.first + c / kChunks) + (c % kChunks) * 8));
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int c = base + u * kThreads + tid;
      if (c >= n_chunks) break;
      const int tok = c / kChunks, col = (c % kChunks) * 8;
      const int y = grid2d ? tok / pb.grid : 0, x = grid2d ? tok - y * pb.grid : tok;
      const int sy = span_y[y], sx = span_x[x];
      float acc[8] = {};
      for (int rr = sy & 0xffff; rr <= (sy >> 16); ++rr)
        for (int cc = sx & 0xffff; cc <= (sx >> 16); ++cc) {
          const float* term = terms + (rr * cols + cc) * D + col;
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[e] += term[e];
        }
      const bf16* o8 = reinterpret_cast<const bf16*>(&old[u]);
      alignas(16) bf16 sum8[8];
#pragma unroll
      for (int e = 0; e < 8; ++e)
        sum8[e] = __float2bfloat16(__bfloat162float(o8[e]) + __bfloat162float(__float2bfloat16(acc[e])));
      *reinterpret_cast<uint4*>(p.dq.out_row(b, h, pb.first + tok) + col) = *reinterpret_cast<const uint4*>(sum8);
    }
  }
}

}  // namespace

using namespace mita_small_core;

int64_t mita_small_backward_scratch(const MitaShape& s) {
  return s.B * s.H * scratch_floats(static_cast<int>(s.N), static_cast<int>(s.d), static_cast<int>(s.m));
}

void mita_small_backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv, float* dr,
                         const AttentionView& dout, const AttentionView& q, const AttentionView& k,
                         const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                         const AttentionView& out, const float* lse, const float* lse_shared,
                         const MitaRoutingArrays& routing, const MitaSmallPool& pool, const MitaShape& s,
                         float* scratch, cudaStream_t stream) {
  VT_CHECK(mita_small_supported(s) && mita_small_pool_fits(pool, s),
           "[mita] the one-CTA MiTA kernels do not take N = ", s.N, ", m = ", s.m, ", k = ", s.k, ", head dim ", s.d,
           " with landmarks pooled over tokens ", pool.first, "..", pool.first + pool.L - 1);
  BwdParams p{rows_of(q),
              rows_of(k),
              rows_of(v),
              rows_of(r),
              rows_of(v_hat),
              rows_of(out),
              rows_of(dout),
              rows_of(dq),
              rows_of(dk),
              rows_of(dv),
              lse,
              lse_shared,
              routing.expert_keys,
              routing.order,
              routing.offsets,
              pool_bins(pool, s),
              dr,
              scratch,
              static_cast<int>(s.H),
              static_cast<int>(s.N),
              static_cast<int>(s.m),
              static_cast<int>(s.k),
              s.scale,
              s.shared_scale,
              s.scale * kLog2e,
              s.shared_scale * kLog2e};
  dispatch_small_dim(s.d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    const BwdLayout layout(p.N, D, p.m);
    const int bytes = layout.total;
    VT_CHECK(key_sums_bytes(p.N, D) <= layout.r - layout.k, "[mita] the keys' f32 sums outgrow K and V's room");
    VT_CUDA_CHECK(cudaFuncSetAttribute(small_backward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    small_backward_kernel<D><<<static_cast<unsigned>(s.B * s.H), kBwdWarps * 32, bytes, stream>>>(p);
    VT_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace vt::kernels::cuda
