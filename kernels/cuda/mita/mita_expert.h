// MiTA's joint attention per expert on tensor cores (bf16, sm_90) with no limit on m or k: the forward is
// mita_joint_forward_mma (mita_mma.h: 64 queries of one expert against its slots streamed in tiles of 64), the
// backward mita_expert_backward (mita_expert_bwd.cu). The same inputs and outputs as the masked flash kernels
// (mita_flash.h), whose cost grows with N² instead of N·(m + k): ops/mita.cpp picks between them.
#pragma once
#include <cstdint>

#include "kernels/cuda/mita/mita.h"  // MitaShape, MitaRoutingArrays, AttentionView
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// True when mita_expert_backward takes `s` (bf16 operands assumed): d ∈ {32, 64, 128}, 1 ≤ k ≤ N, grid limits.
bool mita_expert_supported(const MitaShape& s);

/// f32 elements of scratch mita_expert_backward needs: the rows' dO·O, and the routed dK/dV sums per
/// (expert, slot) when deterministic, else per key.
int64_t mita_expert_backward_workspace(const MitaShape& s, bool deterministic);

/// Gradients of mita_joint_forward_mma from dout and the forward's out and lse: dq, dk, dv (bf16 [B, H, N, d]
/// views, overwritten) and, when s.shared, dr, dv_hat ([B, H, m, d] f32 contiguous, overwritten):
/// dr = Σ_n dS_nc·shared_scale·q_n, dv_hat = Σ_n P_nc·dO_n. deterministic: no float atomics (same bits every run);
/// otherwise the routed dk/dv sums of keys that several experts hold are added with f32 atomics.
void mita_expert_backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv, float* dr,
                          float* dv_hat, const AttentionView& dout, const AttentionView& q, const AttentionView& k,
                          const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                          const AttentionView& out, const float* lse, const MitaRoutingArrays& routing,
                          const MitaShape& s, bool deterministic, float* workspace, KernelStream stream);

}  // namespace vt::kernels::cuda
