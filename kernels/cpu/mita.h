// MiTA kernels on the CPU (docs/mita-spec.md §2.3, one expert per query): the routing (top-k keys per landmark,
// arg-max expert per query, queries grouped by expert) and the joint-softmax attention over [m shared ∪ k routed]
// slots, forward and backward. Plain loops with f64 accumulation, parallel over (batch, head); the oracle the
// CUDA kernels (kernels/cuda/mita/mita.h) are compared with.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

/// A [B, H, rows, d] operand: element (b, h, r, c) at data[b·batch_stride + h·head_stride + r·row_stride + c].
struct HeadView {
  const void* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
};

struct MitaSizes {
  int64_t B = 0, H = 0, N = 0, m = 0, k = 0, d = 0;
  double scale = 1.0, shared_scale = 1.0;  // routed / shared logit scales
  bool shared = true;                      // false: route-only
};

/// The routing tensors of ops::MitaRouting, contiguous i32.
struct MitaIndex {
  const int32_t* expert_keys = nullptr;  // [B, H, m, k]
  const int32_t* experts = nullptr;      // [B, H, N]
  const int32_t* order = nullptr;        // [B, H, N]
  const int32_t* offsets = nullptr;      // [B, H, m + 1]
};

/// Writes the routing (the MitaIndex arrays, in that layout) from q, k [B, H, N, d] and landmarks r [B, H, m, d];
/// f32/f64.
void mita_route(DType dtype, const HeadView& q, const HeadView& k, const HeadView& r, const MitaSizes& s,
                int32_t* expert_keys, int32_t* experts, int32_t* order, int32_t* offsets);

/// out [B, H, N, d] (written through its view) = the joint-softmax attention; f32/f64.
void mita_attention_forward(DType dtype, const HeadView& out, const HeadView& q, const HeadView& k,
                            const HeadView& v, const HeadView& r, const HeadView& v_hat, const MitaIndex& idx,
                            const MitaSizes& s);

/// Gradients of mita_attention_forward given dout: dq, dk, dv [B, H, N, d], dr, dv_hat [B, H, m, d], all
/// overwritten (dr, dv_hat untouched when !s.shared). f32/f64.
void mita_attention_backward(DType dtype, const HeadView& dq, const HeadView& dk, const HeadView& dv,
                             const HeadView& dr, const HeadView& dv_hat, const HeadView& dout, const HeadView& q,
                             const HeadView& k, const HeadView& v, const HeadView& r, const HeadView& v_hat,
                             const MitaIndex& idx, const MitaSizes& s);

}  // namespace vt::kernels::cpu
