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

/// What ViT-5 (models/vit.h, ViTConfig::vit5) adds to the dense and MiTA kinds, as the official MiTA-ViT-5
/// attention modules do: qkv without bias; RMSNorm (eps 1e-6) on each head's q and k (`q_norm`, `k_norm`, weight
/// [d]); then the rotary embedding of models/rope.h on q and k over the layout [CLS, G×G patches, registers]. The
/// MiTA landmarks pool the patch tokens alone. Built inside the model, qkv and proj keep the model's
/// trunc_normal(0.02) init (DeiT's MiTA layers are swapped in afterwards and keep PyTorch's default).
struct Vit5Attention {
  bool enabled = false;
  int64_t grid = 0;       ///< G, the patch grid's side
  int64_t registers = 0;  ///< register tokens after the patches (a perfect square)
  double register_theta = 100.0;
};

class Attention : public nn::Module {
 public:
  virtual Tensor forward(const Tensor& x) const = 0;
  std::shared_ptr<nn::RMSNorm> q_norm, k_norm;  ///< ViT-5 only (init_vit5)

 protected:
  /// Registers q_norm, k_norm and the rotary tables (buffers rope_cos, rope_sin) when `v` is enabled.
  void init_vit5(const Vit5Attention& v, int64_t dim, int64_t heads);
  /// The packed projection [B, N, n·C] (q, k, v, ... at channels 0, C, 2C, ...) with q and k normalised and
  /// rotated (ViT-5), in the same layout; `packed` itself when ViT-5 is off.
  Tensor vit5_qk(const Tensor& packed) const;
  Tensor rope_cos_, rope_sin_;
  int64_t vit5_heads_ = 0;
};

/// timm's multi-head self-attention: softmax(q kᵀ / √d) v with fused qkv projection.
class DenseAttention : public Attention {
 public:
  DenseAttention(int64_t dim, int64_t heads, double attn_drop, double proj_drop, Generator& gen,
                 const Vit5Attention& vit5 = {});
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
/// With `vit5` enabled only the dense and mita kinds are built (others are an error naming the type).
std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double drop,
                                          Generator& gen, int64_t num_tokens = 0, const Vit5Attention& vit5 = {});

/// The shape-dependent checks for N = num_tokens (CLS + G×G patches + `registers`): m and agent_num perfect
/// squares, k <= N, a square patch grid for the kinds that need one. Errors name the key, e.g. "model.attention.m".
void check_attention_shape(const AttentionConfig& cfg, int64_t num_tokens, int64_t registers = 0);

/// PyTorch's default nn.Linear init (kaiming_uniform(a=√5): weight and bias ~ U(±1/√in)). The official MiTA repo
/// swaps its attention modules in after timm built (and initialised) the ViT, so their qkv/proj keep this init
/// rather than timm's trunc_normal(0.02) (docs/mita-spec.md §4).
void init_linear_pytorch_default(nn::Linear& layer, Generator& gen);

/// s with s·s = n when n ≥ 0 is a perfect square, else -1 (exact for any int64).
int64_t square_side(int64_t n);

/// The side of the square patch grid when N - 1 - registers is a perfect square, else 0.
int64_t square_grid(int64_t num_tokens, int64_t registers = 0);

}  // namespace vt::models
