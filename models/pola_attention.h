// PolaFormer's polarity-aware linear attention (Meng et al., ICLR 2025), the Table 2 baseline as QishuaiWen/MiTA's
// mita/PoLA.py (`PolaLinearAttention` from ZacharyMeng/PolaFormer's pola_swin.py, shipped commented out there;
// without its DWC and gate, "PolaLinearAttention - DWC - Gate"; alpha 4):
//   q, k, v = x W_qkvᵀ + b;  k ← k + P (learned [1, N, C]);  s = softplus(scale) [1, 1, C];  q ← q/s, k ← k/s;
//   per head, with a learned exponent p = 1 + 4·sigmoid(power) per head and channel ([1, H, 1, d]):
//     q⁺ = ReLU(q)^p, q⁻ = ReLU(−q)^p (k⁺, k⁻ likewise);  K = [k⁺, k⁻] (2d wide);
//     the same-sign half  O_s = Q_s (Kᵀ V₁ / N) / (Q_s · k̄ + 1e-6), Q_s = [q⁺, q⁻], V₁ = v[:, :d/2];
//     the opposite half   O_o = Q_o (Kᵀ V₂ / N) / (Q_o · k̄ + 1e-6), Q_o = [q⁻, q⁺], V₂ = v[:, d/2:];
//     (k̄: the mean of K over the N tokens);  O = [O_s, O_o];  then proj.
// Parameter names are the official ones (qkv, proj, power, scale, positional_encoding), so the official
// checkpoints' keys map one to one. P is sized by N (the official window_size[0]·window_size[1]).
#pragma once
#include "models/attention.h"

namespace vt::models {

/// The whole layer with explicit weights (what PolaAttention::forward runs; tests gradcheck it in f64).
/// x [B, N, C], power [1, H, 1, d], scale [1, 1, C], pos [1, N, C] → [B, N, C]. The head width d must be even.
/// qkv_b and proj_b may be undefined.
Tensor pola_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& power,
                      const Tensor& scale, const Tensor& pos, const Tensor& proj_w, const Tensor& proj_b,
                      int64_t heads);

class PolaAttention : public Attention {
 public:
  /// `tokens` is N, the length of the positional encoding.
  PolaAttention(int64_t dim, int64_t heads, int64_t tokens, double proj_drop, Generator& gen);
  Tensor forward(const Tensor& x) const override;
  std::shared_ptr<nn::Linear> qkv, proj;
  Tensor power;                // "power" [1, H, 1, d], zeros at init (p = 3)
  Tensor scale;                // "scale" [1, 1, C], zeros at init
  Tensor positional_encoding;  // "positional_encoding" [1, N, C], zeros at init

 private:
  int64_t heads_;
  double proj_drop_;
};

}  // namespace vt::models
