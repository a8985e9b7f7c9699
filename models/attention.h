// Attention layers of the ViT block. Every kind maps x [B, N, C] → [B, N, C] and owns the same `qkv` and `proj`
// parameters as timm's Attention, so weights move between kinds. Later kinds (MiTA and its variants) add here.
#pragma once
#include <memory>
#include <string>

#include "nn/layers.h"

namespace vt::models {

/// model.attention in the YAML. Which fields matter depends on `type`.
struct AttentionConfig {
  std::string type = "dense";             // dense | mita | mita_route | agent | agent_bias | linear
  int64_t m = 25;                         // MiTA landmarks (experts); a perfect square for 2-D pooling
  int64_t k = 0;                          // keys per expert; 0 = default (m for mita, 2m for mita_route)
  int64_t s = 1;                          // experts each query is routed to
  bool dwc = false;                       // MiTA + DWC: depth-wise 3x3 conv on V's patch tokens, added before proj
  bool gate = false;                      // MiTA + DWC + Gate: qkvg projection, output * SiLU(g)
  std::string landmark_pool = "shifted";  // shifted (official: tokens 0..N-2) | patches (patch tokens only)
  std::string shared_scale = "official";  // official (1/d on shared logits) | paper (1/sqrt(d))
  int64_t agent_num = 49;                 // Agent attention: number of agent tokens (a perfect square)
};

class Attention : public nn::Module {
 public:
  virtual Tensor forward(const Tensor& x) const = 0;
};

/// timm's multi-head self-attention: softmax(q kᵀ / √d) v with fused qkv projection.
class DenseAttention : public Attention {
 public:
  DenseAttention(int64_t dim, int64_t heads, double attn_drop, double proj_drop, Generator& gen);
  Tensor forward(const Tensor& x) const override;
  std::shared_ptr<nn::Linear> qkv, proj;

 private:
  int64_t heads_;
  double attn_drop_, proj_drop_;
};

/// Builds the attention kind named by `cfg.type`; an unknown kind is an error naming the key.
std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double drop,
                                          Generator& gen);

}  // namespace vt::models
