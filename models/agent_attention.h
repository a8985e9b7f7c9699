// Agent Attention baselines of the MiTA paper (Table 2; docs/mita-spec.md §6), from QishuaiWen/MiTA's
// mita/agent_attention.py and mita/agent_attention_bias.py (themselves from LeapLabTHU's Agent-DeiT, without its DWC):
//   agents A (n = agent_num tokens) are an adaptive average pooling of the full-width queries on the patch grid
//   (sequence models: of all N tokens in 1-D, as MiTA's landmark_pool "sequence");
//   V_A = softmax(A Kᵀ/√d + P) V   (the agents attend to all N tokens),
//   O   = softmax(Q Aᵀ/√d + Q_b) V_A (every token attends to the n agents),
// per head, then proj. "agent" (Agent Attention minus) has no biases and pools like MiTA (tokens 0..N-2, CLS in,
// last patch out); "agent_bias" pools the patch tokens 1..N-1 and adds the official position biases P, Q_b.
// Parameters: timm's `qkv` and `proj` (so dense weights load), plus the bias tensors in their official shapes.
#pragma once
#include <utility>

#include "models/attention.h"

namespace vt::models {

struct AgentOptions {
  int64_t heads = 1;
  int64_t agent_num = 49;     // n, a perfect square p²
  bool patches_only = false;  // pool tokens 1..N-1 (agent_bias) instead of 0..N-2 (MiTA's shifted pooling)
  bool sequence = false;      // pool all N tokens 1-D into agent_num bins (landmark_pool "sequence": no CLS, no grid)
};

/// The official agent biases for H heads, n agents and a G×G patch grid (all trunc_normal(0.02) at init).
struct AgentBiases {
  Tensor an, na;  // [H, n, 7, 7]: agent→patch and patch→agent, bilinearly resized to G×G
  Tensor ah, aw;  // [1, H, n, G, 1], [1, H, n, 1, G]: agent→patch by row and by column
  Tensor ha, wa;  // [1, H, G, 1, n], [1, H, 1, G, n]: patch→agent by row and by column
  Tensor ac, ca;  // [1, H, n, 1], [1, H, 1, n]: agent→CLS and CLS→agent
};

/// Agent tokens [B, n, C]: the chosen N-1 tokens of q [B, N, C] as a row-major G×G grid (N-1 = G²),
/// adaptive-average-pooled to p×p (PyTorch bins), row-major.
Tensor agent_tokens(const Tensor& q, int64_t agent_num, bool patches_only);

/// The bias terms for G×G patches: P [H, n, N] (added to the agents' logits) and Q_b [H, N, n] (added to the
/// tokens' logits); token 0 is the CLS token.
std::pair<Tensor, Tensor> agent_bias_terms(const AgentBiases& b, int64_t grid);

/// PyTorch's F.interpolate(mode='bilinear', align_corners=False) from in×in to out×out as a matrix
/// [out², in²] (row-major pixels): resized = M · flat.
Tensor bilinear_resize_matrix(int64_t in, int64_t out, DType dtype);

/// Agent attention on q, k, v [B, N, C] (channel c belongs to head c/d) → [B, N, C], before proj.
/// `biases` null: no biases ("agent minus").
Tensor agent_core(const Tensor& q, const Tensor& k, const Tensor& v, const AgentOptions& o,
                  const AgentBiases* biases = nullptr);

/// The whole layer with explicit weights (what AgentAttention::forward runs; tests gradcheck it in f64):
/// qkv = x Wᵀ + b → agent_core → proj. qkv_b and proj_b may be undefined.
Tensor agent_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& proj_w,
                       const Tensor& proj_b, const AgentOptions& o, const AgentBiases* biases = nullptr);

class AgentAttention : public Attention {
 public:
  /// grid > 0 adds the official biases for a grid×grid patch grid (agent_bias); 0: none ("agent minus").
  AgentAttention(int64_t dim, const AgentOptions& o, int64_t grid, double proj_drop, Generator& gen);
  Tensor forward(const Tensor& x) const override;
  std::shared_ptr<nn::Linear> qkv, proj;
  AgentBiases bias;  // undefined members without biases

 private:
  AgentOptions opt_;
  int64_t grid_;
  double proj_drop_;
};

}  // namespace vt::models
