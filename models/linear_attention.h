// The linear-attention baseline of the MiTA paper (Table 2 "Linear attention"), as QishuaiWen/MiTA's
// mita/linear_attention.py (after DAGroup-PKU/MHLA's linear_attn.py):
//   q, k, v = x W_qkvᵀ (no bias);  q ← RMSNorm(q), k ← RMSNorm(k) over all C channels (learnable weight, eps 1e-6);
//   per head: φ = ReLU;  O = φ(Q) (φ(K)ᵀ V) / (φ(Q) Σ_n φ(K)_n + 1e-6);  then proj (Linear C→C with bias).
// Precision (as the official module under AMP): the RMSNorms compute in f32 and return the input's dtype (bf16 under
// autocast), and the core φ(Q)(φ(K)ᵀV)/(φ(Q)Σφ(K) + ε) runs in f32 with its inputs cast up (the official
// `torch.autocast(enabled=False)` block), so only the two projections run in bf16.
// There is no DWC, no softmax and no 1/√d scale. With a single head of width C the official module has no output
// projection (to_out = Identity), and so has this one. Parameter names follow ours (qkv, proj) rather than the
// official to_qkv / to_out.0, so qkv/proj weights move between attention kinds; q_norm.weight and k_norm.weight
// are the extra tensors.
#pragma once
#include "models/attention.h"

namespace vt::models {

/// The core on per-head φ(Q), φ(K), V [B, H, N, d], never below f32 (bf16 inputs are cast up, differentiably; f64
/// stays f64): O = φ(Q) (φ(K)ᵀ V) / (φ(Q) Σ_n φ(K)_n + 1e-6), [B, H, N, d].
Tensor linear_attention_core(const Tensor& fq, const Tensor& fk, const Tensor& v);

/// The whole layer with explicit weights (what LinearAttention::forward runs; tests gradcheck it in f64).
/// x [B, N, C] → [B, N, C]. qkv_b, proj_w and proj_b may be undefined (no bias / no projection).
Tensor linear_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& q_norm_w,
                        const Tensor& k_norm_w, const Tensor& proj_w, const Tensor& proj_b, int64_t heads);

class LinearAttention : public Attention {
 public:
  LinearAttention(int64_t dim, int64_t heads, double proj_drop, Generator& gen);
  Tensor forward(const Tensor& x) const override;
  std::shared_ptr<nn::Linear> qkv, proj;  // proj is null with one head (official: to_out = Identity)
  Tensor q_norm_weight, k_norm_weight;    // "q_norm.weight", "k_norm.weight": [C], ones at init

 private:
  int64_t heads_;
  double proj_drop_;
};

}  // namespace vt::models
