// MiTA kernels on the CPU (docs/mita-spec.md §2.3, one expert per query): the routing (top-k keys per landmark,
// arg-max expert per query, queries grouped by expert) and the joint-softmax attention over [m shared ∪ k routed]
// slots, forward and backward. Plain loops with f64 accumulation, parallel over (batch, head); the oracle the
// CUDA kernels (kernels/cuda/mita/mita.h) are compared with.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/shapes.h"  // AttentionView, MitaShapeF64, MitaRoutingArrays

namespace vt::kernels::cpu {

/// Writes the routing (the MitaRoutingArrays, in that layout) from q, k [B, H, N, d] and landmarks r [B, H, m, d];
/// f32/f64.
void mita_route(DType dtype, const AttentionView& q, const AttentionView& k, const AttentionView& r,
                const MitaShapeF64& s, int32_t* expert_keys, int32_t* experts, int32_t* order, int32_t* offsets);

/// out [B, H, N, d] (written through its view) = the joint-softmax attention; f32/f64.
void mita_attention_forward(DType dtype, const AttentionView& out, const AttentionView& q, const AttentionView& k,
                            const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                            const MitaRoutingArrays& idx, const MitaShapeF64& s);

/// Gradients of mita_attention_forward given dout: dq, dk, dv [B, H, N, d], dr, dv_hat [B, H, m, d], all
/// overwritten (dr, dv_hat untouched when !s.shared). f32/f64.
void mita_attention_backward(DType dtype, const AttentionView& dq, const AttentionView& dk, const AttentionView& dv,
                             const AttentionView& dr, const AttentionView& dv_hat, const AttentionView& dout,
                             const AttentionView& q, const AttentionView& k, const AttentionView& v,
                             const AttentionView& r, const AttentionView& v_hat, const MitaRoutingArrays& idx,
                             const MitaShapeF64& s);

}  // namespace vt::kernels::cpu
