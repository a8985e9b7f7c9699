// Internal to src/ops: the joint-softmax attention's kernel calls (forward and backward) and the landmark pooling's
// backward, shared by the per-operand ops of ops/mita.cpp and the packed-qkv training path of ops/mita_qkv.cpp.
#pragma once
#include "kernels/cpu/landmark_pool.h"
#include "ops/mita.h"

namespace vt::ops {

/// The CUDA kernel family that ran the joint attention's forward, so the backward runs its twin.
enum class JointKernel {
  cuda_cores,  // kernels/cuda/mita/mita.h: per expert, f32 or bf16 on CUDA cores (its backward holds an expert's slots)
  masked_flash,  // kernels/cuda/mita/mita_flash.h: every query against all m + N slots with a mask (short N)
  expert,        // kernels/cuda/mita/mita_expert.h: per expert on tensor cores, slots streamed (any m, k)
};

/// What the joint attention's backward reads: the operands [B, H, rows, d] (detached, rows contiguous), the
/// routing, its output and (CUDA) the forward's row log-sum-exp.
struct JointSaved {
  Tensor q, k, v, r, v_hat, out, lse;
  MitaRouting routing;
  MitaAttentionOptions options;
  JointKernel kernel = JointKernel::cuda_cores;  // CUDA: the family that ran the forward
};

/// The kernels' sizes of a joint attention on q [B, H, N, d] with m landmarks and k keys per expert: f64 logit
/// scales for the CPU kernels (MitaShapeF64), f32 for CUDA's (MitaShape). The one place they are built.
template <typename Scale>
kernels::MitaShapeOf<Scale> joint_shape(const Tensor& q, int64_t m, int64_t k, const MitaAttentionOptions& o) {
  return {
      q.size(0), q.size(1), q.size(2), m, k, q.size(3), static_cast<Scale>(o.scale), static_cast<Scale>(o.shared_scale),
      o.shared};
}

/// The joint attention's forward kernels: sets saved.out ([B, H, N, d] laid out [B, N, H, d]) and saved.lse.
void joint_forward(JointSaved& saved);

/// The shared branch's per-query terms of the CUDA joint backward, for a caller that forms dR and dV̂ itself.
struct JointSharedTerms {
  Tensor p_shared, ds_shared;  // [B, H, N, m] f32: the shared slots' probabilities, their logit gradients·shared_scale
  Tensor dout;                 // the gradient as the kernel read it: [B, H, N, d], operands' dtype, rows contiguous
  Tensor dvh, dr;  // or (masked flash) [B, H, m, d] f32: p_sharedᵀ·dout and ds_sharedᵀ·q already summed
};

/// Its gradients: dq, dk, dv are written through their views ([B, H, N, d], any strides, the operands' dtype);
/// dr and dvh ([B, H, m, d], shared branch only) are returned in the operands' dtype. On CUDA with the shared
/// branch and `shared_terms` given, that receives p_shared, ds_shared and dout instead, and dr, dvh stay undefined.
void joint_backward(const JointSaved& saved, const Tensor& grad, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                    Tensor& dr, Tensor& dvh, JointSharedTerms* shared_terms = nullptr);

/// The landmark pooling's kernel sizes for x [B, N, C] (strides: x's, or 0 for the backward's contiguous dx).
kernels::LandmarkPoolShape landmark_pool_shape(int64_t B, int64_t N, int64_t C, const MitaLandmarkLayout& layout,
                                               int64_t batch_stride = 0, int64_t row_stride = 0);

/// The landmark pooling's backward: dx [B, N, C] (contiguous, `dtype`, zero outside the pooled tokens) from the
/// landmarks' gradient [B, m, C].
Tensor landmark_pool_grad(const Tensor& grad, const kernels::LandmarkPoolShape& shape, DType dtype);

}  // namespace vt::ops
