// MiTA's joint attention as a masked flash attention on tensor cores (bf16, sm_90): for short sequences it is
// cheaper to attend every query to all P + N slots with a mask than to gather each expert's slots.
// Slot space of one (batch, head): slot c < P (P = m when s.shared, else 0) is shared landmark c (key r_c,
// value v̂_c, logit scale shared_scale); slot c ≥ P is key/value row c − P (logit scale `scale`). Query n sees
// every shared slot and the routed slot P + j iff j is one of the k keys of its expert
// (routing.expert_keys[b, h, experts[b, h, n], :]); the others get logit −inf, i.e. probability exactly 0, so the
// one softmax over the allowed slots is the spec's joint softmax over [shared | routed]. Repeated keys in an
// expert's list count once here (top-k never repeats one).
// Each launcher first turns expert_keys into per-(b, h, expert) key bitmasks (ceil(N/32) words) in its workspace;
// the backward rebuilds them, so nothing in the workspace has to survive from the forward.
#pragma once
#include <cstdint>

#include "kernels/cuda/flash_attention.h"  // AttentionView
#include "kernels/cuda/mita/mita.h"        // MitaShape, MitaRoutingArrays
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// True when the masked flash kernels handle `s` (bf16 operands assumed): d ∈ {32, 64, 128}, N ≤ 4096,
/// 1 ≤ m ≤ 1024, 1 ≤ k ≤ N.
bool mita_flash_supported(const MitaShape& s);

/// f32 elements of scratch mita_flash_forward / mita_flash_backward need (the key bitmasks, the rows' dO·O).
int64_t mita_flash_workspace(const MitaShape& s);

/// out [B, H, N, d] bf16 (written through its view) and lse [B, H, N] f32 (natural log of the joint softmax's
/// normaliser, as mita_attention_forward's) from bf16 q, k, v [B, H, N, d] and r, v_hat [B, H, m, d] (r, v_hat
/// unused when !s.shared). Views must satisfy flash_attention_aligned; `workspace` holds mita_flash_workspace(s)
/// floats.
void mita_flash_forward(const AttentionView& out, float* lse, const AttentionView& q, const AttentionView& k,
                        const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                        const MitaRoutingArrays& routing, const MitaShape& s, float* workspace, KernelStream stream);

/// Gradients of mita_flash_forward from dout and the forward's out and lse: dq, dk, dv (bf16 [B, H, N, d] views,
/// overwritten) and, when s.shared, dr, dv_hat ([B, H, m, d] f32 contiguous, overwritten):
/// dr = Σ_n dS_nc·shared_scale·q_n, dv_hat = Σ_n P_nc·dO_n. Deterministic (no atomics).
void mita_flash_backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv, float* dr,
                         float* dv_hat, const AttentionView& dout, const AttentionView& q, const AttentionView& k,
                         const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                         const AttentionView& out, const float* lse, const MitaRoutingArrays& routing,
                         const MitaShape& s, float* workspace, KernelStream stream);

}  // namespace vt::kernels::cuda
