// MiTA kernels on the GPU (docs/mita-spec.md §2.3-2.5, one expert per query); the device twins of
// kernels/cpu/mita.h, same routing rules and the same joint softmax, f32 or bf16 operands with f32 math.
//
// Routing (mita_route.cu): the unscaled scores r·kᵀ are an f32 cuBLASLt GEMM into a workspace and
// mita_topk.cu picks each landmark's k keys (ties to the lower index, written in ascending order); each query's
// expert is the arg-max of r·qᵀ (on tensor cores for bf16, mita_mma.cu; else a GEMM and a column arg-max); a
// stable radix sort (CUB) groups the queries by expert. For long-sequence inference mita_route_with_values
// gathers the top-k candidates inside the V̂ kernel instead of storing the scores.
// Joint attention: per expert, its slots — the m shared landmarks (keys scaled by shared_scale) and its k routed
// keys/values — are loaded once and all its queries run against them with an online softmax (mita_mma.cu on
// tensor cores for bf16; mita_attention.cu on CUDA cores otherwise). The backward (mita_attention.cu)
// recomputes the softmax from the saved row log-sum-exp: each query's dq is written once; the shared branch's
// probabilities and logit gradients are written per query so dR and dV̂ are two GEMMs; the routed dK/dV sums are
// made per expert in shared memory, then either added with f32 atomics or, deterministically, written per
// (expert, slot) and summed per key in a fixed order.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"
#include "kernels/shapes.h"  // MitaShape, MitaRoutingArrays, AttentionView

namespace vt::kernels::cuda {

/// Per landmark row (B·H·m rows): the keys whose score r·k reaches a threshold, gathered while the scores are
/// computed so the [m, N] score matrix is never stored (long sequences, inference).
struct MitaCandidates {
  uint32_t* threshold = nullptr;  // [rows] ordered float bits (device/ordered_bits.cuh)
  uint32_t* bits = nullptr;       // [rows][cap] the candidates' scores as ordered bits
  int32_t* index = nullptr;       // [rows][cap] their key indices
  int* count = nullptr;           // [rows] candidates found (may exceed cap: then only cap were stored)
  int cap = 0;
};

/// True when the kernels handle head dim d (16, 32, 64, 128).
bool mita_supports_head_dim(int64_t d);

/// Bytes of scratch memory mita_route needs (the f32 score matrix and the sort buffers).
size_t mita_route_workspace_bytes(const MitaShape& s);

/// Routing from q, k [B, H, N, d] and landmarks r [B, H, m, d] of `dtype` (f32/bf16); writes the four arrays.
void mita_route(DType dtype, const AttentionView& q, const AttentionView& k, const AttentionView& r, const MitaShape& s,
                int32_t* expert_keys, int32_t* experts, int32_t* order, int32_t* offsets, void* workspace,
                KernelStream stream);

/// out [B, H, N, d] (written through its view) and lse [B, H, N] (f32, natural log) of the joint softmax.
void mita_attention_forward(DType dtype, const AttentionView& out, float* lse, const AttentionView& q,
                            const AttentionView& k, const AttentionView& v, const AttentionView& r,
                            const AttentionView& v_hat, const MitaRoutingArrays& routing, const MitaShape& s,
                            KernelStream stream);

/// f32 scratch elements mita_landmark_attention_forward needs.
int64_t mita_landmark_workspace(const MitaShape& s);

/// v_hat [B, H, m, d] = softmax(s.scale·r·kᵀ)·v, forward only, bf16 with f32 softmax statistics, on tensor cores
/// (the keys are split into slices so that few landmarks still fill the GPU; the slices are merged exactly).
/// Needs mita_mma_usable operands (kernels/cuda/mita/mita_mma.h).
/// With `candidates`, also appends every score r_j·k_n (f32, unscaled) at or above candidates->threshold[row]
/// to that row's list (count must start at 0).
void mita_landmark_attention_forward(const AttentionView& v_hat, const AttentionView& r, const AttentionView& k,
                                     const AttentionView& v, const MitaShape& s, float* workspace, KernelStream stream,
                                     const MitaCandidates* candidates = nullptr);

/// Bytes of scratch memory mita_route_with_values needs.
size_t mita_route_with_values_workspace_bytes(const MitaShape& s);

/// Inference on long sequences (bf16, mita_mma_usable operands): mita_route's four arrays and
/// v_hat = softmax(s.scale·r·kᵀ)·v in one pass over the keys. The top-k comes from candidates that the V̂ kernel
/// collects above a per-landmark threshold estimated from 4096 sampled keys (about 2k expected per landmark), so
/// the score matrix is never written; a landmark whose candidates fall short of k or overflow is selected exactly
/// from recomputed scores. Same selection rule as mita_route. N must be a multiple of 4096.
void mita_route_with_values(const AttentionView& q, const AttentionView& k, const AttentionView& v,
                            const AttentionView& r, const AttentionView& v_hat, const MitaShape& s,
                            int32_t* expert_keys, int32_t* experts, int32_t* order, int32_t* offsets, void* workspace,
                            KernelStream stream);

/// Largest m + k (shared + routed slots) the backward kernel holds in shared memory for head dim d.
int64_t mita_backward_max_slots(int64_t d, int64_t k);

/// f32 scratch elements mita_attention_backward needs.
int64_t mita_backward_workspace(const MitaShape& s, bool deterministic);

/// Backward of mita_attention_forward from dout and the saved out/lse:
///   dq, dk, dv [B, H, N, d] (written through their views, dtype of the inputs);
///   p_shared, ds_shared [B, H, N, m] f32 (shared branch only): the joint-softmax probabilities of the shared
///   slots and the gradients of their scaled logits times shared_scale, so that dV̂ = p_sharedᵀ·dout and
///   dR = ds_sharedᵀ·q are GEMMs the caller runs.
/// `workspace` holds mita_backward_workspace(s, deterministic) floats.
void mita_attention_backward(DType dtype, const AttentionView& dq, const AttentionView& dk, const AttentionView& dv,
                             float* p_shared, float* ds_shared, const AttentionView& dout, const AttentionView& q,
                             const AttentionView& k, const AttentionView& v, const AttentionView& r,
                             const AttentionView& v_hat, const AttentionView& out, const float* lse,
                             const MitaRoutingArrays& routing, const MitaShape& s, bool deterministic, float* workspace,
                             KernelStream stream);

/// dk, dv [B, H, N, d] (`dtype`, written through their views; 0 for keys no expert holds) from the routed sums:
/// per_expert, [B·H, m, k, d] f32 per (expert, slot), summed per key over the experts in order (same bits every
/// run); else [B·H, N, d] f32 per key. Experts that no query reached are skipped.
void mita_routed_store(DType dtype, const AttentionView& dk, const AttentionView& dv, const float* routed_dk,
                       const float* routed_dv, bool per_expert, const MitaRoutingArrays& routing, const MitaShape& s,
                       KernelStream stream);

}  // namespace vt::kernels::cuda
