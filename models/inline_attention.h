// InLine attention (Han et al., NeurIPS 2024, "Bridging the Divide"), the Table 2 baseline as QishuaiWen/MiTA's
// mita/inline_attention.py (`InLineAttention`, from LeapLabTHU/InLine's inline_deit.py):
//   q, k, v = x W_qkvᵀ + b, per head (identity kernel, d = C/H, σ = d^-½);
//   O = Q (Kᵀ V) σ/N + (1 − σ · Q k̄ᵀ) v̄   (k̄, v̄: the means over the N tokens; each row's weights sum to 1);
//   plus, on the patch tokens, a depth-wise 3×3 conv of V whose kernels are predicted per image and channel from
//   the token mean of x by `residual`: Conv1d(C, C, 1, groups=H) → GELU → Conv1d(C, 9C, 1, groups=H);
//   then proj. N − 1 must be a square patch grid (token 0 is CLS, which gets no residual).
// Parameter names are the official ones (qkv, proj, residual.0, residual.2), so the official checkpoints' keys
// map one to one.
#pragma once
#include "models/attention.h"

namespace vt::models {

/// The whole layer with explicit weights (what InLineAttention::forward runs; tests gradcheck it in f64).
/// x [B, N, C]; res0_w [C, C/H, 1], res0_b [C], res2_w [9C, C/H, 1], res2_b [9C] → [B, N, C]. qkv_b, proj_b may
/// be undefined.
Tensor inline_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& res0_w,
                        const Tensor& res0_b, const Tensor& res2_w, const Tensor& res2_b, const Tensor& proj_w,
                        const Tensor& proj_b, int64_t heads);

class InLineAttention : public Attention {
 public:
  InLineAttention(int64_t dim, int64_t heads, double proj_drop, Generator& gen);
  Tensor forward(const Tensor& x) const override;
  std::shared_ptr<nn::Linear> qkv, proj;
  Tensor res0_weight, res0_bias, res2_weight, res2_bias;  // "residual.0.*", "residual.2.*" (Conv1d, PyTorch init)

 private:
  int64_t heads_;
  double proj_drop_;
};

}  // namespace vt::models
