// MiTA's shared branch in training, fused (one CTA per (b, h), CUDA cores, f32 math): V̂ = softmax(scale·R·Kᵀ)·V
// over all N keys and its backward, reading the [B, H, rows, d] head views (f32 or bf16, strided: slices of the
// packed qkv) in place. Used by ops::mita_qkv_attention instead of f32 copies of the views plus small GEMMs.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/mita/mita.h"  // MitaShape, AttentionView
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// True when the fused shared-branch kernels handle `s` on the current device: head dim 16, 32, 64 or 128 and the
/// [m, N] f32 logits of one (b, h) (plus staging) fit in one block's shared memory.
bool mita_shared_supported(const MitaShape& s);

/// probs [B, H, m, N] (f32, contiguous) = softmax over N of s.scale·r·kᵀ; v_hat [B, H, m, d] = probs·v rounded to
/// `dtype` (written through its view). r [B, H, m, d], k and v [B, H, N, d] are views of `dtype` (f32/bf16).
void mita_shared_forward(DType dtype, const AttentionView& v_hat, float* probs, const AttentionView& r,
                         const AttentionView& k, const AttentionView& v, const MitaShape& s, KernelStream stream);

/// Backward of mita_shared_forward together with the joint attention's shared slots, all sums in f32:
///   dvh = p_sharedᵀ·dout, dP = dvh·vᵀ, dS = probs ∘ (dP − rowsum(dP ∘ probs))·s.scale,
///   dr = ds_sharedᵀ·q + dS·k  → written to dr [B, m, H·d] f32 contiguous (landmark j of head h at
///                                 dr[(b·m + j)·H·d + h·d + t], the landmark pooling's gradient layout),
///   dk += dSᵀ·r, dv += probsᵀ·dvh  (read-add-write through the [B, H, N, d] views, `dtype`).
/// probs from mita_shared_forward; p_shared, ds_shared [B, H, N, m] f32 contiguous from mita_attention_backward.
/// Or, with p_shared = ds_shared = null, dvh_in and dr_in ([B, H, m, d] f32 contiguous: dvh and ds_sharedᵀ·q
/// already summed, as mita_flash_backward gives them) replace the first two products.
void mita_shared_backward(DType dtype, const AttentionView& dk, const AttentionView& dv, float* dr, const float* probs,
                          const float* p_shared, const float* ds_shared, const AttentionView& dout,
                          const AttentionView& q, const AttentionView& r, const AttentionView& k,
                          const AttentionView& v, const MitaShape& s, KernelStream stream,
                          const float* dvh_in = nullptr, const float* dr_in = nullptr);

}  // namespace vt::kernels::cuda
