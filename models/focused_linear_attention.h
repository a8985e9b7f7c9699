// FLatten, focused linear attention (Han et al., ICCV 2023), the Table 2 baseline as QishuaiWen/MiTA's
// mita/focused_linear_attention.py (`FocusedLinearAttention`, focusing_factor 3, its DWC commented out):
//   q, k, v = x W_qkvᵀ + b;  k ← k + P (a learned [1, N, C] positional encoding);  s = softplus(scale) [1, 1, C];
//   q ← (ReLU(q) + 1e-6) / s,  k likewise;
//   focusing over all C channels: f(t) = t³ · ‖t‖ / ‖t³‖ (the norm of t kept, its direction sharpened);
//   per head: O = f(Q) (f(K)ᵀ V) / (f(Q) · Σ_n f(K)_n + 1e-6);  then proj.
// Parameter names are the official ones (qkv, proj, scale, positional_encoding), so the official checkpoints'
// keys map one to one. P is sized by N (the official default n = 197 is DeiT's 224² with CLS).
#pragma once
#include "models/attention.h"

namespace vt::models {

/// The whole layer with explicit weights (what FocusedLinearAttention::forward runs; tests gradcheck it in f64).
/// x [B, N, C], scale [1, 1, C], pos [1, N, C] → [B, N, C]. qkv_b and proj_b may be undefined.
Tensor focused_linear_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& scale,
                                const Tensor& pos, const Tensor& proj_w, const Tensor& proj_b, int64_t heads);

class FocusedLinearAttention : public Attention {
 public:
  /// `tokens` is N, the length of the positional encoding.
  FocusedLinearAttention(int64_t dim, int64_t heads, int64_t tokens, double proj_drop, Generator& gen);
  Tensor forward(const Tensor& x) const override;
  std::shared_ptr<nn::Linear> qkv, proj;
  Tensor scale;                // "scale" [1, 1, C], zeros at init (softplus(0) = ln 2)
  Tensor positional_encoding;  // "positional_encoding" [1, N, C], zeros at init

 private:
  int64_t heads_;
  double proj_drop_;
};

}  // namespace vt::models
