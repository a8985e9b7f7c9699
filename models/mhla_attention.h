// MHLA, multi-head linear attention (DAGroup-PKU/MHLA), the Table 2 baseline as QishuaiWen/MiTA's mita/mhla.py
// (`MHLA`, transform "cos", no qk norm, the normaliser removed as in that file):
//   the G×G token grid (no CLS token; G a multiple of 4) is cut into P = (G/4)² blocks of 4×4 tokens;
//   x ← LayerNorm(x) (its own `norm`, eps 1e-5);  q, k, v = x W_qkvᵀ + b;  φ(t) = ReLU(t) + 1e-6 on q and k;
//   per head and block p: S_p = φ(K_p)ᵀ V_p [d, d];  the blocks' states mixed by a P×P matrix M (a 1×1 conv over
//   the block index, `piece_attn.conv.weight`, initialised from the blocks' centre distances: cos(π/4 · dist /
//   max dist), each column summed to 1, and trained);  O_p = φ(Q_p) Σ_j M[p, j] S_j;  then proj.
// No softmax, no 1/√d, no normaliser. The official code lays the tokens out block by block for the whole network
// (its forward_features); this layer takes them row-major and regroups them itself, which is the same map since
// everything outside attention works token by token.
// Parameter names: `qkv` and `proj` as the other kinds (the official to_qkv and to_out.0, mapped as linear
// attention's are), `norm.*` and `piece_attn.conv.weight` as the official ones.
#pragma once
#include "models/attention.h"

namespace vt::models {

/// The block-mixing matrix's official initial value for a grid×grid token grid: [P, P, 1, 1], P = (grid/4)².
Tensor mhla_block_mixing_init(int64_t grid, DType dtype);

/// The whole layer with explicit weights (what MhlaAttention::forward runs; tests gradcheck it in f64).
/// x [B, G², C] row-major tokens, norm_w/norm_b [C], piece_w [P, P, 1, 1] → [B, G², C]. qkv_b, proj_b may be
/// undefined.
Tensor mhla_attention(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b, const Tensor& qkv_w,
                      const Tensor& qkv_b, const Tensor& piece_w, const Tensor& proj_w, const Tensor& proj_b,
                      int64_t heads);

class MhlaAttention : public Attention {
 public:
  /// `tokens` = G², G a multiple of 4 and at least 8 (two blocks a side).
  MhlaAttention(int64_t dim, int64_t heads, int64_t tokens, double proj_drop, Generator& gen);
  Tensor forward(const Tensor& x) const override;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::Linear> qkv, proj;
  Tensor piece_weight;  // "piece_attn.conv.weight" [P, P, 1, 1]

 private:
  int64_t heads_;
  double proj_drop_;
};

}  // namespace vt::models
