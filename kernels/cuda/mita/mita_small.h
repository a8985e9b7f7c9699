// The whole MiTA layer core (s = 1, shared branch on) in one CTA per (batch, head) each way, for short sequences
// such as DeiT's N = 197: the keys and values of all N rows live in shared memory, so routing, V̂, the joint softmax
// and every gradient run in one launch per direction.
//
// Forward (mita_small_fwd.cu): the landmarks R pooled from q (mita_landmark_pool's bins and bits), S = R·Kᵀ on tensor cores → each landmark's top-k keys (ties: the lower key) and the
// softmax of scale·S, V̂ = softmax·V; each query's expert = arg-max of q·Rᵀ (first landmark on ties), a stable
// counting sort by expert; then per expert and 16 queries, one warp: [shared_scale·q·Rᵀ | scale·q·K_Iᵀ] → one
// softmax → P·[V̂ ; V_I]. Backward (mita_small_bwd.cu): per expert and 16 queries, one warp recomputes P from the saved log-sum-exp and
// writes dq once, keeping the item's routed dS and P (as MMA fragments) and each query's dS and P over the shared
// slots in a global scratch that stays in L2; dR and dV̂ are then summed over all queries with one f32 reduction per
// warp (the last bits vary run to run: the deterministic mode uses the per-expert kernels); then V̂'s backward over all
// keys; then dK and dV in f32 in shared memory, each warp owning a column slice and walking every item's routed
// slots, plus V̂'s share; then the pooling's backward: each query's share of dR added to its dq.
// Same routing rule and results as mita_route + mita_attention with the shared branch's flash attention.
#pragma once
#include <cstdint>

#include "kernels/cuda/mita/mita.h"  // MitaShape, MitaRoutingArrays, AttentionView
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// Where the landmarks come from: m bins over tokens first .. first + L − 1 of q (mita_landmark_pool's rule); grid > 0:
/// the tokens form a grid × grid patch grid cut into pool × pool bins (pool² = m), else 1-D bins.
struct MitaSmallPool {
  int first = 0, L = 0, grid = 0, pool = 0;
};

/// True when the kernels can pool `pool` for `s` (the tokens lie in [0, N); a 2-D grid has grid² = L, pool² = m).
bool mita_small_pool_fits(const MitaSmallPool& pool, const MitaShape& s);

/// True when both kernels take `s` on the current device: bf16 operands assumed, the shared branch on, head dim
/// 32 or 64, 1 ≤ m, k ≤ 32, N ≤ 512 and K, V of all N rows fit in shared memory.
bool mita_small_supported(const MitaShape& s);

/// Forward: out [B, H, N, d] (bf16, written through its view), lse [B, H, N] (joint softmax, natural log),
/// lse_shared [B, H, m] (V̂'s softmax), v_hat [B, H, m, d] bf16 contiguous, the four routing arrays
/// (ops::MitaRouting's layout) and the landmarks r [B, H, m, d] (bf16 view, written: pooled from q as `pool` says)
/// from q, k, v [B, H, N, d] (bf16 views).
void mita_small_forward(const AttentionView& out, float* lse, float* lse_shared, void* v_hat, int32_t* expert_keys,
                        int32_t* experts, int32_t* order, int32_t* offsets, const AttentionView& r,
                        const AttentionView& q, const AttentionView& k, const AttentionView& v,
                        const MitaSmallPool& pool, const MitaShape& s, KernelStream stream);

/// f32 elements of scratch mita_small_backward needs (the routed dK, dV and dV̂ sums of every (b, h); 16-byte aligned).
int64_t mita_small_backward_scratch(const MitaShape& s);

/// Backward from dout and the forward's results: dq, dk, dv [B, H, N, d] (bf16 views, overwritten; dq includes
/// the landmarks' share through the pooling, summed as landmark_pool_backward + an add would: dR rounded to bf16,
/// each token's share rounded to bf16, then added) and dr [B, m, H·d] f32 (overwritten): the landmarks' gradient,
/// joint and V̂ parts, laid out as the pooled tokens.
void mita_small_backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv, float* dr,
                         const AttentionView& dout, const AttentionView& q, const AttentionView& k,
                         const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                         const AttentionView& out, const float* lse, const float* lse_shared,
                         const MitaRoutingArrays& routing, const MitaSmallPool& pool, const MitaShape& s,
                         float* scratch, KernelStream stream);

}  // namespace vt::kernels::cuda
