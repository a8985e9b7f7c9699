// The bf16 tensor-core paths of the MiTA kernels (mma.sync m16n8k16, f32 accumulation; the flash-attention
// helpers of flash_attention_device.cuh), for operands whose rows are 16-byte aligned and head dims 32/64/128:
//   joint forward: a CTA of 4 warps takes 64 queries of one expert (gathered through `order`) and streams the
//     expert's slots [m shared | k routed] (gathered rows) in tiles of 64 with an online softmax — FlashAttention
//     with gathers, so an expert's keys/values are loaded once per 64 of its queries;
//   landmark attention (V̂ = softmax(scale·R Kᵀ) V, forward only): 64 landmarks per CTA over one slice of the
//     keys (split-K, so few landmarks still fill the GPU), then a merge of the slices' (max, sum, partial O);
//   routing arg-max: 64 queries per CTA against all landmarks, keeping each row's maximum and its first index.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/device/ordered_bits.cuh"
#include "kernels/cuda/flash_attention_device.cuh"
#include "kernels/cuda/mita/mita_mma.h"
#include "kernels/cuda/mita/mita_tiles.cuh"

namespace vt::kernels::cuda {

using flash::bf16;
using mita_tiles::find_tile;
using mita_tiles::kRows;
using mita_tiles::kThreads;
using mita_tiles::load_rows;
using mita_tiles::RowSource;
using mita_tiles::source;

namespace {

constexpr int kCols = 64;
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

/// Online-softmax state of one warp's 16 rows (rows g and g + 8 of the warp's slice, per thread).
template <int D>
struct Softmax16 {
  float o[D / 8][4];
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  __device__ Softmax16() { flash::zero(o); }
};

/// s [16 × 64] = the warp's query rows (fragments qf) · the key tile kt [64][LD]ᵀ, raw f32.
template <int D>
__device__ __forceinline__ void scores(float (&s)[kCols / 8][4], const uint32_t (&qf)[D / 16][4], const bf16* kt,
                                       int lane) {
  flash::zero(s);
  flash::add_a_bt<D, kCols>(s, qf, kt, D + flash::kPad, lane);
}

/// One online-softmax step over a tile of log2-domain logits s (masked columns already −inf; the state's first
/// tile must hold a finite logit in every row), then O += P·V with V's tile vt [64][LD].
template <int D>
__device__ __forceinline__ void softmax_pv(Softmax16<D>& st, float (&s)[kCols / 8][4], const bf16* vt, int lane) {
  flash::online_softmax_step<D, kCols>(s, st.row_max, st.row_sum, st.o);
  flash::add_pv<D, kCols>(st.o, s, vt, D + flash::kPad, lane);
}

/// Row sums finished across the quad (each thread summed its own columns).
template <int D>
__device__ __forceinline__ void finish_sums(Softmax16<D>& st) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    st.row_sum[r] += __shfl_xor_sync(0xffffffffu, st.row_sum[r], 1);
    st.row_sum[r] += __shfl_xor_sync(0xffffffffu, st.row_sum[r], 2);
  }
}

/// Q tile plus double-buffered K and V tiles.
template <int D>
constexpr int smem_bytes() {
  return 5 * kRows * (D + flash::kPad) * static_cast<int>(sizeof(bf16));
}

// ---- joint forward ----

struct JointParams {
  RowSource q, k, v, r, vh, out;
  float* lse;
  const int32_t *expert_keys, *order, *offsets;
  int H, N, m, k_slots, msh;
  float shared_log2, routed_log2;
};

template <int D>
__global__ void __launch_bounds__(kThreads) joint_forward_kernel(const JointParams p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sK = sQ + kRows * LD;      // [2][kCols][LD]
  bf16* sV = sK + 2 * kCols * LD;  // [2][kCols][LD]
  __shared__ const bf16* rows_q[kRows];
  __shared__ const bf16* rows_k[2][kCols];
  __shared__ const bf16* rows_v[2][kCols];
  __shared__ int query_of[kRows];

  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H;
  int expert, q0, first, count;
  if (!find_tile(p.offsets + bh * (p.m + 1), p.m, blockIdx.x, expert, q0, first, count)) return;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int32_t* ekeys = p.expert_keys + (bh * p.m + expert) * p.k_slots;
  const int S = p.msh + p.k_slots, tiles = (S + kCols - 1) / kCols;
  // Row addresses of slot tile j into table j & 1 (threads 0..63; a barrier must follow before they are read).
  auto slot_rows = [&](int j) {
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
  }
  slot_rows(0);
  __syncthreads();
  load_rows<D>(sQ, rows_q, p.q.data, tid);
  load_rows<D>(sK, rows_k[0], p.q.data, tid);
  load_rows<D>(sV, rows_v[0], p.q.data, tid);
  cp_async_commit();

  Softmax16<D> st;
  uint32_t qf[D / 16][4];
  for (int j = 0; j < tiles; ++j) {
    if (j + 1 < tiles) {  // prefetch the next slot tile into the other buffer while this one is used
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
      for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[kk], a_rows(sQ, LD, warp * 16, kk * 16, lane));
    }
    const bf16* kt = sK + (j & 1) * kCols * LD;
    const bf16* vt = sV + (j & 1) * kCols * LD;
    // An expert has N/m queries on average (8 at DeiT's N = 197, m = 25): warps without rows skip their MMAs, so
    // the SM's tensor cores go to the warps that have work.
    if (q0 + warp * 16 < count) {
      float s[kCols / 8][4];
      scores<D>(s, qf, kt, lane);
#pragma unroll
      for (int nt = 0; nt < kCols / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int slot = j * kCols + nt * 8 + 2 * t + (e & 1);
          s[nt][e] = slot < p.msh ? s[nt][e] * p.shared_log2 : slot < S ? s[nt][e] * p.routed_log2 : -INFINITY;
        }
      softmax_pv<D>(st, s, vt, lane);
    }
    __syncthreads();  // the next iteration's prefetch overwrites this tile's buffers
  }
  finish_sums<D>(st);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int n = query_of[warp * 16 + g + 8 * r];
    if (n < 0) continue;
    const float inv = 1.f / st.row_sum[r];
    bf16* dst = const_cast<bf16*>(p.out.row(b, h, n));
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
      *reinterpret_cast<__nv_bfloat162*>(dst + i * 8 + 2 * t) =
          __floats2bfloat162_rn(st.o[i][2 * r] * inv, st.o[i][2 * r + 1] * inv);
    if (t == 0) p.lse[bh * p.N + n] = st.row_max[r] * kLn2 + logf(st.row_sum[r]);
  }
}

// ---- landmark attention (V̂), split over the keys ----

struct LandmarkParams {
  RowSource r, k, v;
  float *part_o, *part_max, *part_sum;  // [BH][splits][m][D], [BH][splits][m] ×2
  int H, N, m, chunk, splits;
  float scale_log2;
  MitaCandidates cand;  // cand.count == nullptr: no candidates wanted
};

template <int D>
__global__ void __launch_bounds__(kThreads) landmark_partial_kernel(const LandmarkParams p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sK = sQ + kRows * LD;      // [2][kCols][LD]
  bf16* sV = sK + 2 * kCols * LD;  // [2][kCols][LD]
  const int64_t bh = blockIdx.z, b = bh / p.H, h = bh % p.H;
  const int m0 = blockIdx.x * kRows, split = blockIdx.y;
  const int key0 = split * p.chunk, key1 = min(p.N, key0 + p.chunk);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int m_valid = min(kRows, p.m - m0), tiles = (key1 - key0 + kCols - 1) / kCols;
  load_tile<D, kRows, kThreads>(sQ, p.r.row(b, h, m0), p.r.n, 0, m_valid, tid);
  load_tile<D, kCols, kThreads>(sK, p.k.row(b, h, key0), p.k.n, 0, key1 - key0, tid);
  load_tile<D, kCols, kThreads>(sV, p.v.row(b, h, key0), p.v.n, 0, key1 - key0, tid);
  cp_async_commit();
  Softmax16<D> st;
  uint32_t qf[D / 16][4];
  uint32_t threshold[2] = {0xFFFFFFFFu, 0xFFFFFFFFu};
  if (p.cand.count)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = m0 + warp * 16 + g + 8 * r;
      if (row < p.m) threshold[r] = p.cand.threshold[bh * p.m + row];
    }
  for (int j = 0; j < tiles; ++j) {
    const int k0 = key0 + j * kCols;
    if (j + 1 < tiles) {  // prefetch the next key tile into the other buffer
      const int nb = (j + 1) & 1, kn = k0 + kCols;
      load_tile<D, kCols, kThreads>(sK + nb * kCols * LD, p.k.row(b, h, kn), p.k.n, 0, key1 - kn, tid);
      load_tile<D, kCols, kThreads>(sV + nb * kCols * LD, p.v.row(b, h, kn), p.v.n, 0, key1 - kn, tid);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[kk], a_rows(sQ, LD, warp * 16, kk * 16, lane));
    }
    float s[kCols / 8][4];
    scores<D>(s, qf, sK + (j & 1) * kCols * LD, lane);
    if (p.cand.count) {  // the raw scores at or above the row's threshold become top-k candidates
#pragma unroll
      for (int nt = 0; nt < kCols / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = k0 + nt * 8 + 2 * t + (e & 1), row = m0 + warp * 16 + g + 8 * (e / 2);
          const uint32_t u = device::ordered_bits(s[nt][e]);
          if (col < key1 && row < p.m && u >= threshold[e / 2]) {
            const int64_t at = bh * p.m + row;
            const int slot = atomicAdd(p.cand.count + at, 1);
            if (slot < p.cand.cap) p.cand.bits[at * p.cand.cap + slot] = u, p.cand.index[at * p.cand.cap + slot] = col;
          }
        }
    }
#pragma unroll
    for (int nt = 0; nt < kCols / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = k0 + nt * 8 + 2 * t + (e & 1) < key1 ? s[nt][e] * p.scale_log2 : -INFINITY;
    softmax_pv<D>(st, s, sV + (j & 1) * kCols * LD, lane);
    __syncthreads();
  }
  finish_sums<D>(st);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = m0 + warp * 16 + g + 8 * r;
    if (row >= p.m) continue;
    const int64_t at = (bh * p.splits + split) * p.m + row;
    float* dst = p.part_o + at * D;
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      dst[i * 8 + 2 * t] = st.o[i][2 * r];
      dst[i * 8 + 2 * t + 1] = st.o[i][2 * r + 1];
    }
    if (t == 0) p.part_max[at] = st.row_max[r], p.part_sum[at] = st.row_sum[r];
  }
}

/// V̂ row = Σ_s 2^(max_s − M)·O_s / Σ_s 2^(max_s − M)·sum_s; a warp per (b·h, landmark).
template <int D>
__global__ void landmark_merge_kernel(const LandmarkParams p, AttentionView out, int64_t rows) {
  const int64_t w = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (w >= rows) return;
  const int64_t bh = w / p.m, row = w % p.m, b = bh / p.H, h = bh % p.H;
  float M = -INFINITY;
  for (int s = 0; s < p.splits; ++s) M = fmaxf(M, p.part_max[(bh * p.splits + s) * p.m + row]);
  float L = 0.f, acc[D / 32];
#pragma unroll
  for (int c = 0; c < D / 32; ++c) acc[c] = 0.f;
  for (int s = 0; s < p.splits; ++s) {
    const int64_t at = (bh * p.splits + s) * p.m + row;
    const float w_s = exp2f(p.part_max[at] - M);
    L += w_s * p.part_sum[at];
#pragma unroll
    for (int c = 0; c < D / 32; ++c) acc[c] += w_s * p.part_o[at * D + lane + 32 * c];
  }
  bf16* dst = static_cast<bf16*>(const_cast<void*>(out.data)) + b * out.batch_stride + h * out.head_stride +
              row * out.row_stride;
#pragma unroll
  for (int c = 0; c < D / 32; ++c) dst[lane + 32 * c] = __float2bfloat16_rn(acc[c] / L);
}

// ---- routing arg-max ----

struct ArgmaxParams {
  RowSource q, r;
  int32_t *experts, *sort_keys, *sort_values;
  int H, N, m;
};

template <int D>
__global__ void __launch_bounds__(kThreads) argmax_kernel(const ArgmaxParams p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sK = sQ + kRows * LD;
  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H;
  const int n0 = blockIdx.x * kRows;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  load_tile<D, kRows, kThreads>(sQ, p.q.row(b, h, n0), p.q.n, 0, p.N - n0, tid);
  cp_async_commit();
  float best[2] = {-INFINITY, -INFINITY};
  int arg[2] = {0, 0};
  uint32_t qf[D / 16][4];
  for (int j0 = 0, j = 0; j0 < p.m; j0 += kCols, ++j) {
    load_tile<D, kCols, kThreads>(sK, p.r.row(b, h, j0), p.r.n, 0, p.m - j0, tid);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[kk], a_rows(sQ, LD, warp * 16, kk * 16, lane));
    }
    float s[kCols / 8][4];
    scores<D>(s, qf, sK, lane);
#pragma unroll
    for (int nt = 0; nt < kCols / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = j0 + nt * 8 + 2 * t + (e & 1);  // ascending within a thread: '>' keeps the first maximum
        if (col < p.m && s[nt][e] > best[e / 2]) best[e / 2] = s[nt][e], arg[e / 2] = col;
      }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
#pragma unroll
    for (int d = 1; d <= 2; d <<= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best[r], d);
      const int oa = __shfl_xor_sync(0xffffffffu, arg[r], d);
      if (ob > best[r] || (ob == best[r] && oa < arg[r])) best[r] = ob, arg[r] = oa;
    }
    const int n = n0 + warp * 16 + g + 8 * r;
    if (t == 0 && n < p.N) {
      const int64_t at = bh * p.N + n;
      p.experts[at] = arg[r];
      p.sort_keys[at] = static_cast<int32_t>(bh * p.m + arg[r]);
      p.sort_values[at] = n;
    }
  }
}

template <typename F>
void dispatch_mma_dim(int64_t d, F&& f) {
  switch (d) {
    case 32: return f(std::integral_constant<int, 32>{});
    case 64: return f(std::integral_constant<int, 64>{});
    case 128: return f(std::integral_constant<int, 128>{});
    default: VT_FAIL("[mita] tensor-core kernels support head dims 32, 64, 128, got ", d);
  }
}

template <typename Kernel>
void allow_smem(Kernel kernel, int bytes) {
  VT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

}  // namespace

bool mita_mma_usable(const MitaShape& s, std::initializer_list<const AttentionView*> views) {
  if (!(s.d == 32 || s.d == 64 || s.d == 128)) return false;
  for (const AttentionView* v : views)
    if (!flash_attention_aligned(*v)) return false;
  return true;
}

void mita_joint_forward_mma(const AttentionView& out, float* lse, const AttentionView& q, const AttentionView& k,
                            const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                            const MitaRoutingArrays& rt, const MitaShape& s, cudaStream_t stream) {
  JointParams p{source(q),
                source(k),
                source(v),
                source(r),
                source(v_hat),
                source(out),
                lse,
                rt.expert_keys,
                rt.order,
                rt.offsets,
                static_cast<int>(s.H),
                static_cast<int>(s.N),
                static_cast<int>(s.m),
                static_cast<int>(s.k),
                s.shared ? static_cast<int>(s.m) : 0,
                s.shared_scale * kLog2e,
                s.scale * kLog2e};
  const dim3 grid(static_cast<unsigned>((s.N + kRows - 1) / kRows + s.m), static_cast<unsigned>(s.B * s.H));
  dispatch_mma_dim(s.d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    allow_smem(joint_forward_kernel<D>, smem_bytes<D>());
    joint_forward_kernel<D><<<grid, kThreads, smem_bytes<D>(), stream>>>(p);
    VT_CUDA_CHECK(cudaGetLastError());
  });
}

namespace {
int landmark_splits(const MitaShape& s) {
  // Enough CTAs for about eight full waves (three resident per SM), so the last wave's idle SMs cost little;
  // each slice keeps at least 512 keys.
  const int64_t tiles = s.B * s.H * ((s.m + kRows - 1) / kRows);
  int64_t splits = std::max<int64_t>(1, (8 * 3 * device::sm_count() + tiles - 1) / tiles);
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, s.N / 512));
  return static_cast<int>(splits);
}
int landmark_chunk(const MitaShape& s, int splits) {
  return static_cast<int>(((s.N + splits - 1) / splits + kCols - 1) / kCols * kCols);
}
}  // namespace

int64_t mita_landmark_workspace(const MitaShape& s) {
  const int splits = landmark_splits(s);
  const int chunk = landmark_chunk(s, splits);
  const int64_t used = (s.N + chunk - 1) / chunk;
  return s.B * s.H * used * s.m * (s.d + 2);
}

void mita_landmark_attention_forward(const AttentionView& v_hat, const AttentionView& r, const AttentionView& k,
                                     const AttentionView& v, const MitaShape& s, float* workspace, cudaStream_t stream,
                                     const MitaCandidates* candidates) {
  int splits = landmark_splits(s);
  const int chunk = landmark_chunk(s, splits);
  splits = static_cast<int>((s.N + chunk - 1) / chunk);  // every slice non-empty
  const int64_t BH = s.B * s.H, rows = BH * s.m;
  LandmarkParams p{source(r),
                   source(k),
                   source(v),
                   workspace,
                   workspace + rows * splits * s.d,
                   workspace + rows * splits * (s.d + 1),
                   static_cast<int>(s.H),
                   static_cast<int>(s.N),
                   static_cast<int>(s.m),
                   chunk,
                   splits,
                   s.scale * kLog2e,
                   candidates ? *candidates : MitaCandidates{}};
  const dim3 grid(static_cast<unsigned>((s.m + kRows - 1) / kRows), static_cast<unsigned>(splits),
                  static_cast<unsigned>(BH));
  dispatch_mma_dim(s.d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    allow_smem(landmark_partial_kernel<D>, smem_bytes<D>());
    landmark_partial_kernel<D><<<grid, kThreads, smem_bytes<D>(), stream>>>(p);
    VT_CUDA_CHECK(cudaGetLastError());
    landmark_merge_kernel<D><<<static_cast<unsigned>((rows * 32 + 255) / 256), 256, 0, stream>>>(p, v_hat, rows);
    VT_CUDA_CHECK(cudaGetLastError());
  });
}

void mita_argmax_mma(const AttentionView& q, const AttentionView& r, const MitaShape& s, int32_t* experts,
                     int32_t* sort_keys, int32_t* sort_values, cudaStream_t stream) {
  ArgmaxParams p{source(q),
                 source(r),
                 experts,
                 sort_keys,
                 sort_values,
                 static_cast<int>(s.H),
                 static_cast<int>(s.N),
                 static_cast<int>(s.m)};
  const dim3 grid(static_cast<unsigned>((s.N + kRows - 1) / kRows), static_cast<unsigned>(s.B * s.H));
  dispatch_mma_dim(s.d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    constexpr int bytes = 2 * kRows * (D + flash::kPad) * static_cast<int>(sizeof(bf16));
    allow_smem(argmax_kernel<D>, bytes);
    argmax_kernel<D><<<grid, kThreads, bytes, stream>>>(p);
    VT_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace vt::kernels::cuda
