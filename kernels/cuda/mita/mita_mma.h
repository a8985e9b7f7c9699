// The bf16 tensor-core MiTA kernels (mita_mma.cu); kernels/cuda/mita/mita.h's launchers pick them when they apply.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/mita/mita.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// True when the tensor-core kernels can read these bf16 operands: head dim 32/64/128, 16-byte aligned rows.
bool mita_mma_usable(const MitaShape& s, std::initializer_list<const AttentionView*> views);

/// mita_attention_forward on tensor cores (bf16).
void mita_joint_forward_mma(const AttentionView& out, float* lse, const AttentionView& q, const AttentionView& k,
                            const AttentionView& v, const AttentionView& r, const AttentionView& v_hat,
                            const MitaRoutingArrays& routing, const MitaShape& s, KernelStream stream);

/// experts[b, h, n] = first argmax_j r_j·q_n on tensor cores, plus the grouping sort's keys (b·h·m + expert) and
/// values (n).
void mita_argmax_mma(const AttentionView& q, const AttentionView& r, const MitaShape& s, int32_t* experts,
                     int32_t* sort_keys, int32_t* sort_values, KernelStream stream);

}  // namespace vt::kernels::cuda
