// Attention layers of the ViT block. Every kind maps x [B, N, C] → [B, N, C] and owns the same `qkv` and `proj`
// parameters as timm's Attention, so weights move between kinds. Later kinds (MiTA and its variants) add here.
#pragma once
#include <memory>
#include <string>

#include "nn/layers.h"

namespace vt::models {

struct AttentionConfig {
  std::string type = "dense";
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
