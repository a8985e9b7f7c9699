// Flash attention forward (FlashAttention-2): one CTA of 4 warps takes 64 query rows of one (batch, head), each
// warp 16 rows; K/V tiles of 64 keys stream through double-buffered shared memory with cp.async while the
// previous tile is used. Scores and P·V run on bf16 tensor cores with f32 accumulation; the online softmax is in
// f32 in the log2 domain (scale·log2 e folded into one multiply, exp2f). Keys past Nk are masked to −inf, query
// rows past N are computed on zeros and not stored (Nk = N for self-attention).
#include <cuda_bf16.h>

#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/flash_attention_device.cuh"

namespace vt::kernels::cuda {

using flash::bf16;

namespace {

constexpr int kBlockM = 64, kBlockN = 64, kThreads = 128;
constexpr float kLog2e = 1.4426950408889634f;

struct FwdParams {
  const bf16 *q, *k, *v;
  bf16* out;
  float* lse;
  int64_t q_b, q_h, q_n, k_b, k_h, k_n, v_b, v_h, v_n, o_b, o_h, o_n;
  int H, N, Nk, m_blocks;  // N query rows, Nk key/value rows
  float scale_log2;
};

template <int D>
constexpr int fwd_smem_bytes() {
  return (kBlockM + 4 * kBlockN) * (D + flash::kPad) * static_cast<int>(sizeof(bf16));
}

// ---- kernels ----

template <int D>
__global__ void __launch_bounds__(kThreads) flash_attention_fwd_kernel(const FwdParams p) {
  using namespace flash;
  constexpr int LD = D + kPad;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // [kBlockM][LD]
  bf16* sK = sQ + kBlockM * LD;                  // [2][kBlockN][LD]
  bf16* sV = sK + 2 * kBlockN * LD;              // [2][kBlockN][LD]

  const int64_t bh = blockIdx.x / p.m_blocks;
  const int m0 = static_cast<int>(blockIdx.x % p.m_blocks) * kBlockM;
  const int64_t b = bh / p.H, h = bh % p.H;
  const bf16* q = p.q + b * p.q_b + h * p.q_h;
  const bf16* k = p.k + b * p.k_b + h * p.k_h;
  const bf16* v = p.v + b * p.v_b + h * p.v_h;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, t = lane % 4;
  const int N = p.N, Nk = p.Nk, n_tiles = (Nk + kBlockN - 1) / kBlockN;

  load_tile<D, kBlockM, kThreads>(sQ, q, p.q_n, m0, N, tid);
  load_tile<D, kBlockN, kThreads>(sK, k, p.k_n, 0, Nk, tid);
  load_tile<D, kBlockN, kThreads>(sV, v, p.v_n, 0, Nk, tid);
  cp_async_commit();

  uint32_t qf[D / 16][4];
  float o[D / 8][4];
  zero(o);
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};  // rows g and g+8; sums are per thread

  for (int j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_tiles) {  // prefetch the next tile into the other buffer
      const int nb = (j + 1) & 1;
      load_tile<D, kBlockN, kThreads>(sK + nb * kBlockN * LD, k, p.k_n, (j + 1) * kBlockN, Nk, tid);
      load_tile<D, kBlockN, kThreads>(sV + nb * kBlockN * LD, v, p.v_n, (j + 1) * kBlockN, Nk, tid);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[kk], a_rows(sQ, LD, warp * 16, kk * 16, lane));
    }
    const bf16* kt = sK + (j & 1) * kBlockN * LD;
    const bf16* vt = sV + (j & 1) * kBlockN * LD;
    // Work only where it counts: a warp whose 16 query rows all lie past N, and the 16-key chunks of the last tile
    // past N, skip their MMAs (warp-uniform branches; the loads and barriers stay shared). At N = 197 this drops
    // about a third of the products.
    const int key0 = j * kBlockN, valid_keys = min(kBlockN, Nk - key0);
    if (m0 + warp * 16 < N) {
      float s[kBlockN / 8][4];  // S = Q Kᵀ (16 × 64 per warp), then P
      zero(s);
      add_a_bt<D, kBlockN>(s, qf, kt, LD, lane, valid_keys);
#pragma unroll
      for (int nt = 0; nt < kBlockN / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = key0 + nt * 8 + 2 * t + (e & 1);
          s[nt][e] = col < Nk ? s[nt][e] * p.scale_log2 : -INFINITY;
        }
      online_softmax_step<D, kBlockN>(s, row_max, row_sum, o);
      add_pv<D, kBlockN>(o, s, vt, LD, lane, valid_keys);  // O += P V, P (bf16) straight from the accumulators
    }                                                      // rows of this warp below N
    __syncthreads();  // the next iteration's prefetch overwrites this tile's buffers
  }

  store_attention_rows<D>(p.out + b * p.o_b + h * p.o_h, p.o_n, p.lse + bh * N, m0 + warp * 16, N, o, row_max, row_sum,
                          lane);
}

template <int D>
void launch_forward(const FwdParams& p, int64_t blocks, cudaStream_t stream) {
  constexpr int smem = fwd_smem_bytes<D>();
  VT_CUDA_CHECK(cudaFuncSetAttribute(flash_attention_fwd_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  flash_attention_fwd_kernel<D><<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

// ---- launchers ----

bool flash_attention_supports(int64_t d) { return d == 32 || d == 64 || d == 128; }

bool flash_attention_fills_device(const AttentionShape& s) {
  const int64_t blocks = s.B * s.H * ((s.N + kBlockM - 1) / kBlockM);
  return 4 * blocks >= device::sm_count() || s.kv_rows() < 16384;
}

bool flash_attention_aligned(const AttentionView& view) {
  return reinterpret_cast<uintptr_t>(view.data) % 16 == 0 && view.batch_stride % 8 == 0 && view.head_stride % 8 == 0 &&
         view.row_stride % 8 == 0;
}

void flash_attention_forward(const AttentionView& out, float* lse, const AttentionView& q, const AttentionView& k,
                             const AttentionView& v, const AttentionShape& s, cudaStream_t stream) {
  VT_CHECK(flash_attention_supports(s.d), "[flash_attention] head dim ", s.d, " not supported (32, 64, 128)");
  VT_CHECK(flash_attention_aligned(q) && flash_attention_aligned(k) && flash_attention_aligned(v) &&
               flash_attention_aligned(out),
           "[flash_attention] operands must be 16-byte aligned with strides that are multiples of 8");
  VT_CHECK(s.N < (int64_t{1} << 31) && s.kv_rows() < (int64_t{1} << 31), "[flash_attention] N = ", s.N, " (keys ",
           s.kv_rows(), ") too large");
  if (s.B * s.H * s.N == 0) return;
  VT_CHECK(s.kv_rows() >= 1, "[flash_attention] needs at least one key");
  FwdParams p{static_cast<const bf16*>(q.data),
              static_cast<const bf16*>(k.data),
              static_cast<const bf16*>(v.data),
              static_cast<bf16*>(const_cast<void*>(out.data)),
              lse,
              q.batch_stride,
              q.head_stride,
              q.row_stride,
              k.batch_stride,
              k.head_stride,
              k.row_stride,
              v.batch_stride,
              v.head_stride,
              v.row_stride,
              out.batch_stride,
              out.head_stride,
              out.row_stride,
              static_cast<int>(s.H),
              static_cast<int>(s.N),
              static_cast<int>(s.kv_rows()),
              static_cast<int>((s.N + kBlockM - 1) / kBlockM),
              s.scale * kLog2e};
  const int64_t blocks = s.B * s.H * p.m_blocks;
  VT_CHECK(blocks < (int64_t{1} << 31), "[flash_attention] grid of ", blocks, " blocks too large");
  switch (s.d) {
    case 32: return launch_forward<32>(p, blocks, stream);
    case 64: return launch_forward<64>(p, blocks, stream);
    default: return launch_forward<128>(p, blocks, stream);
  }
}

}  // namespace vt::kernels::cuda
