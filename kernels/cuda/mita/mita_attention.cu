// MiTA joint-softmax attention on the GPU, forward and backward (see mita.h for the scheme).
#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_limits.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/device/row_reductions.cuh"
#include "kernels/cuda/mita/mita.h"
#include "kernels/cuda/mita/mita_mma.h"

namespace vt::kernels::cuda {

namespace {

using device::from_acc;
using device::to_acc;
using device::warp_max;

constexpr int kThreads = 256;  // 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kQueriesPerWarp = 4;  // forward: queries a warp keeps in flight (registers)
constexpr int kQueriesPerBlock = kWarps * kQueriesPerWarp;
constexpr int kChunk = 64;  // forward: slots per shared-memory chunk (two per lane)
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <typename T>
__device__ __forceinline__ const T* row_at(const AttentionView& v, int64_t b, int64_t h, int64_t r) {
  return static_cast<const T*>(v.data) + b * v.batch_stride + h * v.head_stride + r * v.row_stride;
}
template <typename T>
__device__ __forceinline__ T* mutable_row_at(const AttentionView& v, int64_t b, int64_t h, int64_t r) {
  return const_cast<T*>(row_at<T>(v, b, h, r));
}

__device__ __forceinline__ float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

/// Slot `slot` of expert e as f32: key·key_scale and value, column c. Slots [0, msh) are the shared landmarks.
template <typename T>
__device__ __forceinline__ void load_slot(const AttentionView& k, const AttentionView& v, const AttentionView& r,
                                          const AttentionView& vh, const int32_t* expert_keys, int msh, int64_t b,
                                          int64_t h, int slot, int c, float shared_mul, float routed_mul, float& key,
                                          float& value) {
  if (slot < msh) {
    key = to_acc(row_at<T>(r, b, h, slot)[c]) * shared_mul;
    value = to_acc(row_at<T>(vh, b, h, slot)[c]);
  } else {
    const int n = expert_keys[slot - msh];
    key = to_acc(row_at<T>(k, b, h, n)[c]) * routed_mul;
    value = to_acc(row_at<T>(v, b, h, n)[c]);
  }
}

// ---- forward ----

/// Block (expert e, b·h, z): queries z·32, z·32 + Z·32, ... of expert e, 4 per warp, against its slots in
/// chunks of 64 (scores: one slot per lane and half-chunk; output: D/32 columns per lane). Logits are kept in
/// the log2 domain (keys pre-scaled by log2 e).
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    mita_forward_kernel(AttentionView out, float* __restrict__ lse, AttentionView q, AttentionView k, AttentionView v,
                        AttentionView r, AttentionView vh, MitaRoutingArrays rt, MitaShape s) {
  constexpr int KP = D + 4;                 // padded f32 row: float4-aligned, conflict-free quarter-warps
  constexpr int PL = D >= 32 ? D / 32 : 1;  // output columns per lane
  extern __shared__ float4 smem_f4[];
  float* keys = reinterpret_cast<float*>(smem_f4);  // [kChunk][KP]
  float* vals = keys + kChunk * KP;                 // [kChunk][KP]
  float* qs = vals + kChunk * KP;                   // [kQueriesPerBlock][D]
  const int e = blockIdx.x;
  const int64_t bh = blockIdx.y, b = bh / s.H, h = bh % s.H;
  const int m = static_cast<int>(s.m), kk = static_cast<int>(s.k), N = static_cast<int>(s.N);
  const int32_t* off = rt.offsets + bh * (m + 1);
  const int first = off[e], count = off[e + 1] - first;
  if (count == 0) return;
  const int32_t* queries = rt.order + bh * N + first;
  const int32_t* ekeys = rt.expert_keys + (bh * m + e) * kk;
  const int msh = s.shared ? m : 0, S = msh + kk;
  const float shared_mul = s.shared_scale * kLog2e, routed_mul = s.scale * kLog2e;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  for (int qb = blockIdx.z * kQueriesPerBlock; qb < count; qb += gridDim.z * kQueriesPerBlock) {
    __syncthreads();  // the previous batch is done with qs
    for (int i = tid; i < kQueriesPerBlock * D; i += kThreads) {
      const int t = qb + i / D;
      qs[i] = t < count ? to_acc(row_at<T>(q, b, h, queries[t])[i % D]) : 0.f;
    }
    float run_max[kQueriesPerWarp], run_sum[kQueriesPerWarp], acc[kQueriesPerWarp][PL];
#pragma unroll
    for (int i = 0; i < kQueriesPerWarp; ++i) {
      run_max[i] = -INFINITY;
      run_sum[i] = 0.f;
#pragma unroll
      for (int c = 0; c < PL; ++c) acc[i][c] = 0.f;
    }
    for (int c0 = 0; c0 < S; c0 += kChunk) {
      __syncthreads();
      for (int i = tid; i < kChunk * D; i += kThreads) {
        const int j = i / D, c = i % D, slot = c0 + j;
        float key = 0.f, value = 0.f;
        if (slot < S) load_slot<T>(k, v, r, vh, ekeys, msh, b, h, slot, c, shared_mul, routed_mul, key, value);
        keys[j * KP + c] = key;
        vals[j * KP + c] = value;
      }
      __syncthreads();
      float sc[kQueriesPerWarp][2];
#pragma unroll
      for (int i = 0; i < kQueriesPerWarp; ++i) sc[i][0] = sc[i][1] = 0.f;
      const float* k0 = keys + lane * KP;
      const float* k1 = keys + (lane + 32) * KP;
      const float* qw = qs + warp * kQueriesPerWarp * D;
#pragma unroll 4
      for (int c = 0; c < D; c += 4) {
        const float4 a0 = *reinterpret_cast<const float4*>(k0 + c);
        const float4 a1 = *reinterpret_cast<const float4*>(k1 + c);
#pragma unroll
        for (int i = 0; i < kQueriesPerWarp; ++i) {
          const float4 x = *reinterpret_cast<const float4*>(qw + i * D + c);
          sc[i][0] += dot4(a0, x);
          sc[i][1] += dot4(a1, x);
        }
      }
      const bool valid0 = c0 + lane < S, valid1 = c0 + lane + 32 < S;
      float p[kQueriesPerWarp][2];
#pragma unroll
      for (int i = 0; i < kQueriesPerWarp; ++i) {
        const float s0 = valid0 ? sc[i][0] : -INFINITY, s1 = valid1 ? sc[i][1] : -INFINITY;
        const float new_max = fmaxf(run_max[i], warp_max(fmaxf(s0, s1)));  // finite: slot c0 is valid
        const float corr = exp2f(run_max[i] - new_max);
        p[i][0] = exp2f(s0 - new_max);
        p[i][1] = exp2f(s1 - new_max);
        run_sum[i] = run_sum[i] * corr + device::warp_sum(p[i][0] + p[i][1]);
        run_max[i] = new_max;
#pragma unroll
        for (int c = 0; c < PL; ++c) acc[i][c] *= corr;
      }
      const int jmax = min(kChunk, S - c0);
      for (int j = 0; j < jmax; ++j) {
        float val[PL];
#pragma unroll
        for (int c = 0; c < PL; ++c) val[c] = (lane + 32 * c < D) ? vals[j * KP + lane + 32 * c] : 0.f;
#pragma unroll
        for (int i = 0; i < kQueriesPerWarp; ++i) {
          const float pj = __shfl_sync(0xffffffffu, j < 32 ? p[i][0] : p[i][1], j & 31);
#pragma unroll
          for (int c = 0; c < PL; ++c) acc[i][c] += pj * val[c];
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kQueriesPerWarp; ++i) {
      const int t = qb + warp * kQueriesPerWarp + i;
      if (t >= count) continue;
      const int n = queries[t];
      const float inv = 1.f / run_sum[i];
      T* o = mutable_row_at<T>(out, b, h, n);
#pragma unroll
      for (int c = 0; c < PL; ++c)
        if (lane + 32 * c < D) o[lane + 32 * c] = from_acc<T>(acc[i][c] * inv);
      if (lane == 0) lse[bh * N + n] = (run_max[i] + log2f(run_sum[i])) * kLn2;
    }
  }
}

// ---- backward ----

constexpr int kBwdThreads = 128;  // backward: 4 warps
constexpr int kBwdChunk = 16;     // backward: queries per chunk

/// Shared-memory floats of the backward kernel: the slots' scaled keys and values [S][D+1]; a chunk's q and dout
/// rows [16][D] and p, ds [16][S+1]; the routed dK/dV sums [k][D].
size_t backward_smem_floats(int64_t S, int64_t k, int64_t d) {
  return static_cast<size_t>(2 * S * (d + 1) + 2 * kBwdChunk * d + 2 * kBwdChunk * (S + 1) + 2 * k * d);
}

/// Block (expert e, b·h): the expert's queries in chunks of 16 (ascending n). Per chunk, each warp takes queries
/// (one slot per lane for p and ds, one column per lane for dq); then every thread adds the chunk's terms to the
/// dK/dV sums of the (slot, column) pairs it owns. Each sum has one owner and a fixed order.
template <typename T, int D>
__global__ void __launch_bounds__(kBwdThreads)
    mita_backward_kernel(AttentionView dq, float* __restrict__ p_shared, float* __restrict__ ds_shared,
                         float* __restrict__ routed_dk, float* __restrict__ routed_dv, bool per_expert,
                         AttentionView dout, AttentionView q, AttentionView k, AttentionView v, AttentionView r,
                         AttentionView vh, AttentionView out, const float* __restrict__ lse, MitaRoutingArrays rt,
                         MitaShape s) {
  constexpr int KP = D + 1;
  constexpr int PL = D >= 32 ? D / 32 : 1;  // columns per lane
  constexpr int W = kBwdThreads / 32;
  extern __shared__ float4 smem_f4[];
  const int e = blockIdx.x;
  const int64_t bh = blockIdx.y, b = bh / s.H, h = bh % s.H;
  const int m = static_cast<int>(s.m), kk = static_cast<int>(s.k), N = static_cast<int>(s.N);
  const int32_t* off = rt.offsets + bh * (m + 1);
  const int first = off[e], count = off[e + 1] - first;
  if (count == 0) return;
  const int32_t* queries = rt.order + bh * N + first;
  const int32_t* ekeys = rt.expert_keys + (bh * m + e) * kk;
  const int msh = s.shared ? m : 0, S = msh + kk, SP = S + 1;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  float* keys = reinterpret_cast<float*>(smem_f4);  // [S][KP], pre-scaled (natural log domain)
  float* vals = keys + S * KP;                      // [S][KP]
  float* qs = vals + S * KP;                        // [chunk][D]
  float* gs = qs + kBwdChunk * D;                   // [chunk][D]
  float* ps = gs + kBwdChunk * D;                   // [chunk][SP]
  float* dss = ps + kBwdChunk * SP;                 // [chunk][SP]
  float* gk = dss + kBwdChunk * SP;                 // [k][D] routed dK sum
  float* gv = gk + kk * D;                          // [k][D]

  for (int i = tid; i < S * D; i += kBwdThreads) {
    const int j = i / D, c = i % D;
    float key, value;
    load_slot<T>(k, v, r, vh, ekeys, msh, b, h, j, c, s.shared_scale, s.scale, key, value);
    keys[j * KP + c] = key;
    vals[j * KP + c] = value;
  }
  for (int i = tid; i < kk * D; i += kBwdThreads) gk[i] = gv[i] = 0.f;

  for (int t0 = 0; t0 < count; t0 += kBwdChunk) {
    const int chunk = min(kBwdChunk, count - t0);
    __syncthreads();  // slots loaded / the previous chunk's rows consumed
    for (int tl = warp; tl < chunk; tl += W) {
      const int n = queries[t0 + tl];
      const T* qn = row_at<T>(q, b, h, n);
      const T* gn = row_at<T>(dout, b, h, n);
      const T* on = row_at<T>(out, b, h, n);
      float* qrow = qs + tl * D;
      float* grow = gs + tl * D;
      float dot = 0.f;
      for (int c = lane; c < D; c += 32) {
        const float gc = to_acc(gn[c]);
        qrow[c] = to_acc(qn[c]);
        grow[c] = gc;
        dot += gc * to_acc(on[c]);
      }
      const float row_dot = device::warp_sum(dot);  // dout·out, the softmax's row term
      const float row_lse = lse[bh * N + n];
      __syncwarp();
      for (int j = lane; j < S; j += 32) {
        float logit = 0.f, dp = 0.f;
#pragma unroll 8
        for (int c = 0; c < D; ++c) {
          logit += qrow[c] * keys[j * KP + c];
          dp += grow[c] * vals[j * KP + c];
        }
        const float pj = expf(logit - row_lse), ds = pj * (dp - row_dot);
        ps[tl * SP + j] = pj;
        dss[tl * SP + j] = ds;
        if (j < msh) {
          const int64_t at = (bh * N + n) * m + j;
          p_shared[at] = pj;
          ds_shared[at] = ds * s.shared_scale;
        }
      }
      __syncwarp();
      float acc[PL];
#pragma unroll
      for (int c = 0; c < PL; ++c) acc[c] = 0.f;
      for (int j = 0; j < S; ++j) {
        const float dj = dss[tl * SP + j];
#pragma unroll
        for (int c = 0; c < PL; ++c)
          if (lane + 32 * c < D) acc[c] += dj * keys[j * KP + lane + 32 * c];
      }
      T* dqn = mutable_row_at<T>(dq, b, h, n);
#pragma unroll
      for (int c = 0; c < PL; ++c)
        if (lane + 32 * c < D) dqn[lane + 32 * c] = from_acc<T>(acc[c]);
    }
    __syncthreads();
    for (int i = tid; i < kk * D; i += kBwdThreads) {
      const int slot = msh + i / D, c = i % D;
      float sk = 0.f, sv = 0.f;
      for (int tl = 0; tl < chunk; ++tl) {
        sk += dss[tl * SP + slot] * qs[tl * D + c];
        sv += ps[tl * SP + slot] * gs[tl * D + c];
      }
      gk[i] += sk * s.scale;
      gv[i] += sv;
    }
  }
  __syncthreads();
  if (per_expert) {  // deterministic: one [k][D] block per (b·h, expert), summed per key later
    float* pk = routed_dk + (bh * m + e) * kk * D;
    float* pv = routed_dv + (bh * m + e) * kk * D;
    for (int i = tid; i < kk * D; i += kBwdThreads) pk[i] = gk[i], pv[i] = gv[i];
  } else {  // atomics into [B·H, N, D]
    for (int i = tid; i < kk * D; i += kBwdThreads) {
      const int64_t at = (bh * N + ekeys[i / D]) * D + i % D;
      atomicAdd(routed_dk + at, gk[i]);
      atomicAdd(routed_dv + at, gv[i]);
    }
  }
}

/// dk, dv rows from the routed sums. per_expert: a warp per key n adds, over the experts in order, the slot that
/// holds n (binary search in the ascending key list; empty experts never wrote theirs). Otherwise the [B·H, N, D]
/// accumulators are converted.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    routed_store_kernel(AttentionView dk, AttentionView dv, const float* __restrict__ routed_dk,
                        const float* __restrict__ routed_dv, bool per_expert, MitaRoutingArrays rt, MitaShape s) {
  constexpr int PL = D >= 32 ? D / 32 : 1;
  const int64_t bh = blockIdx.y, b = bh / s.H, h = bh % s.H;
  const int m = static_cast<int>(s.m), kk = static_cast<int>(s.k), N = static_cast<int>(s.N);
  const int n = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (n >= N) return;
  float ak[PL], av[PL];
#pragma unroll
  for (int c = 0; c < PL; ++c) ak[c] = av[c] = 0.f;
  if (per_expert) {
    const int32_t* off = rt.offsets + bh * (m + 1);
    for (int e = 0; e < m; ++e) {
      if (off[e + 1] == off[e]) continue;
      const int32_t* ekeys = rt.expert_keys + (bh * m + e) * kk;
      int lo = 0, hi = kk;
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (ekeys[mid] < n) lo = mid + 1;
        else hi = mid;
      }
      if (lo == kk || ekeys[lo] != n) continue;
      const int64_t at = ((bh * m + e) * kk + lo) * D;
#pragma unroll
      for (int c = 0; c < PL; ++c)
        if (lane + 32 * c < D) ak[c] += routed_dk[at + lane + 32 * c], av[c] += routed_dv[at + lane + 32 * c];
    }
  } else {
    const int64_t at = (bh * N + n) * D;
#pragma unroll
    for (int c = 0; c < PL; ++c)
      if (lane + 32 * c < D) ak[c] = routed_dk[at + lane + 32 * c], av[c] = routed_dv[at + lane + 32 * c];
  }
  T* rk = mutable_row_at<T>(dk, b, h, n);
  T* rv = mutable_row_at<T>(dv, b, h, n);
#pragma unroll
  for (int c = 0; c < PL; ++c)
    if (lane + 32 * c < D) rk[lane + 32 * c] = from_acc<T>(ak[c]), rv[lane + 32 * c] = from_acc<T>(av[c]);
}

}  // namespace

void mita_routed_store(DType dtype, const AttentionView& dk, const AttentionView& dv, const float* routed_dk,
                       const float* routed_dv, bool per_expert, const MitaRoutingArrays& routing, const MitaShape& s,
                       cudaStream_t stream) {
  device::dispatch_f32_bf16(dtype, "mita_attention", [&](auto tag) {
    using T = decltype(tag);
    device::dispatch_head_dim(s.d, "mita_attention", [&](auto dim) {
      constexpr int D = decltype(dim)::value;
      const dim3 grid(static_cast<unsigned>((s.N + kWarps - 1) / kWarps), static_cast<unsigned>(s.B * s.H));
      routed_store_kernel<T, D><<<grid, kThreads, 0, stream>>>(dk, dv, routed_dk, routed_dv, per_expert, routing, s);
      VT_CUDA_CHECK(cudaGetLastError());
    });
  });
}

namespace {

void check_shape(const MitaShape& s) {
  VT_CHECK(s.B * s.H <= 65535, "[mita_attention] B·H = ", s.B * s.H, " exceeds the 65535 grid rows of the kernels");
  VT_CHECK(s.N < (int64_t{1} << 31) && s.B * s.H * s.N * s.d < (int64_t{1} << 40), "[mita_attention] N = ", s.N,
           " is too large");
}

}  // namespace

void mita_attention_forward(DType dtype, const AttentionView& out, float* lse, const AttentionView& q,
                            const AttentionView& k, const AttentionView& v, const AttentionView& r,
                            const AttentionView& v_hat, const MitaRoutingArrays& routing, const MitaShape& s,
                            cudaStream_t stream) {
  check_shape(s);
  if (dtype == DType::bf16 && mita_mma_usable(s, {&out, &q, &k, &v, &r, &v_hat}))
    return mita_joint_forward_mma(out, lse, q, k, v, r, v_hat, routing, s, stream);
  device::dispatch_f32_bf16(dtype, "mita_attention", [&](auto tag) {
    using T = decltype(tag);
    device::dispatch_head_dim(s.d, "mita_attention", [&](auto dim) {
      constexpr int D = decltype(dim)::value;
      const size_t smem = sizeof(float) * (2 * kChunk * (D + 4) + kQueriesPerBlock * D);
      auto kernel = mita_forward_kernel<T, D>;
      VT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      // Split an expert's queries over z when experts hold many (about N/m each), so long sequences fill the GPU.
      const int64_t per_expert = (s.N + s.m - 1) / s.m;
      const unsigned z = static_cast<unsigned>(std::clamp<int64_t>(per_expert / (2 * kQueriesPerBlock), 1, 64));
      const dim3 grid(static_cast<unsigned>(s.m), static_cast<unsigned>(s.B * s.H), z);
      kernel<<<grid, kThreads, smem, stream>>>(out, lse, q, k, v, r, v_hat, routing, s);
      VT_CUDA_CHECK(cudaGetLastError());
    });
  });
}

int64_t mita_backward_max_slots(int64_t d, int64_t k) {
  const int64_t budget =
      max_dynamic_shared_memory() / static_cast<int64_t>(sizeof(float)) - 2 * k * d - 2 * kBwdChunk * d - 2 * kBwdChunk;
  return std::max<int64_t>(0, budget / (2 * (d + 1) + 2 * kBwdChunk));
}

int64_t mita_backward_workspace(const MitaShape& s, bool deterministic) {
  const int64_t BH = s.B * s.H;
  return 2 * (deterministic ? BH * s.m * s.k * s.d : BH * s.N * s.d);
}

void mita_attention_backward(DType dtype, const AttentionView& dq, const AttentionView& dk, const AttentionView& dv,
                             float* p_shared, float* ds_shared, const AttentionView& dout, const AttentionView& q,
                             const AttentionView& k, const AttentionView& v, const AttentionView& r,
                             const AttentionView& v_hat, const AttentionView& out, const float* lse,
                             const MitaRoutingArrays& routing, const MitaShape& s, bool deterministic, float* workspace,
                             cudaStream_t stream) {
  check_shape(s);
  const int64_t S = (s.shared ? s.m : 0) + s.k;
  VT_CHECK(S <= mita_backward_max_slots(s.d, s.k), "[mita_attention] the CUDA backward holds an expert's m + k = ", S,
           " slots in shared memory; at head dim ", s.d, " it fits at most ", mita_backward_max_slots(s.d, s.k));
  const int64_t half = mita_backward_workspace(s, deterministic) / 2;
  float* routed_dk = workspace;
  float* routed_dv = workspace + half;
  if (!deterministic) VT_CUDA_CHECK(cudaMemsetAsync(workspace, 0, sizeof(float) * 2 * half, stream));
  device::dispatch_f32_bf16(dtype, "mita_attention", [&](auto tag) {
    using T = decltype(tag);
    device::dispatch_head_dim(s.d, "mita_attention", [&](auto dim) {
      constexpr int D = decltype(dim)::value;
      const size_t smem = sizeof(float) * backward_smem_floats(S, s.k, D);
      auto kernel = mita_backward_kernel<T, D>;
      VT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      const dim3 grid(static_cast<unsigned>(s.m), static_cast<unsigned>(s.B * s.H));
      kernel<<<grid, kBwdThreads, smem, stream>>>(dq, p_shared, ds_shared, routed_dk, routed_dv, deterministic, dout, q,
                                                  k, v, r, v_hat, out, lse, routing, s);
      VT_CUDA_CHECK(cudaGetLastError());
    });
  });
  mita_routed_store(dtype, dk, dv, routed_dk, routed_dv, deterministic, routing, s, stream);
}

}  // namespace vt::kernels::cuda
