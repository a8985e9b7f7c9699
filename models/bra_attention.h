// BRA, bi-level routing attention (Zhu et al., BiFormer, CVPR 2023), the routing baseline of Table 2, as
// rayleizhu/BiFormer's ops/bra_legacy.py (`BiLevelRoutingAttention`) with the settings its models use:
// qk_dim = dim, kv_downsample_mode 'identity', param_routing = diff_routing = soft_routing = False (the routing
// is a hard, non-differentiable top-k), param_attention 'qkvo', side_dwconv 5. On the G×G patch map cut into
// n_win × n_win regions of w × w patches (w = G / n_win, R = n_win² regions):
//   q, k, v = x W_qkvᵀ + b (one Linear, [q; k; v]);
//   region queries / keys q_r, k_r = the means of each region's q / k (no gradient: the official detaches them);
//   the affinity s·q_r k_rᵀ [R, R] over all C channels (all heads together); each region keeps its topk best;
//   per head, each region's w² queries attend the k/v of the topk·w² patches of its routed regions, one softmax
//   with scale s;  plus LCE: a depth-wise 5×5 conv (with bias) of V over the patch map, added to the patches;
//   then the output projection.
// The CLS token (ours; BiFormer has none): it belongs to no region and takes no part in the routing; its query
// attends densely to all N tokens (CLS + patches), and every patch query sees the CLS key/value in the same
// softmax as its routed patches; no LCE on it. The fixture (scripts/make_baseline_fixtures.py) runs the official
// module on the patch map with the CLS key/value appended to every region's gathered set in the same way.
// Scale s: `head_dim` (d^-½, d = C/H, as dense attention; the default) or `qk_dim` (C^-½: the official module's
// qk_scale=None default, self.qk_dim ** -0.5 with qk_dim = dim), model.attention.bra_scale.
// Parameter names: `qkv` and `proj` as the other kinds (the official qkv.qkv and wo; engine/weight_layouts maps
// them both ways), `lepe.weight` [C, 1, 5, 5] / `lepe.bias` [C] as the official ones.
// The regions' k/v are gathered by ops::index_select; the 5×5 conv is ops::depthwise_conv2d.
#pragma once
#include "models/attention.h"

namespace vt::models {

struct BraOptions {
  int64_t heads = 1;
  int64_t n_win = 7;  ///< regions per side of the patch map (it must divide the grid side G)
  int64_t topk = 16;  ///< regions each region routes to, 1..n_win²
  double scale = 1;   ///< the softmax (and routing) scale s
};

/// The scale model.attention.bra_scale names for width C in `heads` heads: head_dim → (C/H)^-½, qk_dim → C^-½.
double bra_scale(const std::string& which, int64_t dim, int64_t heads);

/// The whole layer with explicit weights (what BraAttention::forward runs; tests gradcheck it in f64).
/// x [B, 1 + G², C] (CLS first), lepe_w [C, 1, 5, 5], lepe_b [C] → [B, 1 + G², C]. qkv_b, proj_b may be undefined.
Tensor bra_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& lepe_w,
                     const Tensor& lepe_b, const Tensor& proj_w, const Tensor& proj_b, const BraOptions& o);

class BraAttention : public Attention {
 public:
  BraAttention(int64_t dim, const BraOptions& o, double proj_drop, Generator& gen);
  Tensor forward(const Tensor& x) const override;
  std::shared_ptr<nn::Linear> qkv, proj;
  Tensor lepe_weight, lepe_bias;  // "lepe.weight" [C, 1, 5, 5], "lepe.bias" [C] (Conv2d, PyTorch's init)

 private:
  BraOptions o_;
  double proj_drop_;
};

}  // namespace vt::models
