// Attention layers of the ViT block. Every kind maps x [B, N, C] → [B, N, C] and owns the same `qkv` and `proj`
// parameters as timm's Attention, so weights move between kinds (the MiTA Gate variant has `qkvg` instead, and
// some kinds add tensors: DWC, agent biases, the linear kind's q/k norms). make_attention picks the kind.
#pragma once
#include <memory>
#include <string>

#include "io/config.h"
#include "nn/layers.h"

namespace vt::models {

/// model.attention in the YAML: one definition, in io/config.h (fields, defaults and config-level validation).
using AttentionConfig = io::AttentionConfig;

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

/// Builds the attention kind named by `cfg.type`; an unknown kind is an error naming the key. `num_tokens` is the
/// sequence length N the layer will see (CLS + patches) or 0 when unknown: when given, the checks that need N
/// (check_attention_shape) run here, so a bad combination fails when the model is built, naming the key.
/// agent_bias needs it (its bias parameters are sized by the patch grid).
std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double drop,
                                          Generator& gen, int64_t num_tokens = 0);

/// The shape-dependent checks for N = num_tokens (CLS + G×G patches): m and agent_num perfect squares, k <= N,
/// a square patch grid for the kinds that need one. Errors name the key, e.g. "model.attention.m".
void check_attention_shape(const AttentionConfig& cfg, int64_t num_tokens);

/// PyTorch's default nn.Linear init (kaiming_uniform(a=√5): weight and bias ~ U(±1/√in)). The official MiTA repo
/// swaps its attention modules in after timm built (and initialised) the ViT, so their qkv/proj keep this init
/// rather than timm's trunc_normal(0.02) (docs/mita-spec.md §4).
void init_linear_pytorch_default(nn::Linear& layer, Generator& gen);

/// s with s·s = n when n ≥ 0 is a perfect square, else -1 (exact for any int64).
int64_t square_side(int64_t n);

/// The side of the square patch grid when N - 1 is a perfect square, else 0.
int64_t square_grid(int64_t num_tokens);

}  // namespace vt::models
