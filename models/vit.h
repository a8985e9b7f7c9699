// Vision Transformer (timm's VisionTransformer with DeiT settings): patch embedding, CLS token, learned
// position embedding, pre-norm blocks, final norm, CLS pooling, linear head. Parameter names match timm.
// ViT-5 (ViTConfig::vit5) is the same skeleton with the official MiTA-ViT-5 models_vit5.py's parts and names.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "models/attention.h"

namespace vt::models {

struct ViTConfig {
  int64_t img_size = 224, patch_size = 16, in_chans = 3, num_classes = 1000;
  int64_t embed_dim = 192, depth = 12, num_heads = 3;
  double mlp_ratio = 4.0, drop_rate = 0.0, drop_path_rate = 0.0, layer_norm_eps = 1e-6;
  /// DeiT's distillation token (timm's VisionTransformerDistilled): `dist_token` after CLS, pos_embed over both,
  /// and a second classifier `head_dist` on it; the logits are (head(x_cls) + head_dist(x_dist)) / 2, as timm
  /// returns outside distilled training. Dense attention only.
  bool distilled = false;
  AttentionConfig attention;
  /// ViT-5 (models_vit5.py's vit_models as vit5_small/base/large build it): RMSNorm for norm1, norm2 and norm (no
  /// bias); LayerScale `gamma_1`, `gamma_2` [D] from 1e-4; `reg_token` [1, R, D] (R = num_registers) after the
  /// patches; pos_embed [1, G², D] added to the patch tokens only; the attention's ViT-5 parts (Vit5Attention:
  /// no qkv bias, q/k RMSNorm, rotary positions); drop_path_rate in every block (not a linear ramp).
  bool vit5 = false;
  int64_t num_registers = 0;
  uint64_t seed = 0;  // initialisation stream
  /// Tokens before the patch tokens: CLS, plus the distillation token; none with MHLA attention (below).
  int64_t num_prefix_tokens() const { return attention.type == "mhla" ? 0 : distilled ? 2 : 1; }
  /// The side of the patch grid the blocks see: img_size / patch_size, except with MHLA attention, which takes the
  /// official MHLA-DeiT layout (no CLS token; the image zero-padded evenly on each side until the grid is a
  /// multiple of 4 and at least 8: 224² → 256², 16×16 patches; the classifier on the mean token).
  int64_t token_grid() const;
  /// Every token a block sees: prefix + G² patches + registers.
  int64_t num_tokens() const;
};

/// x + drop_path(attn(norm1(x))); x + drop_path(mlp(norm2(x))); ViT-5: each branch times its LayerScale gamma.
class Block : public nn::Module {
 public:
  Block(const ViTConfig& cfg, double drop_path, Generator& gen);
  Tensor forward(const Tensor& x) const;
  /// The same block given norm1(x) already (`normed`): {output, next_norm(output)}, each residual add fused with
  /// the norm after it (nn::Norm::forward_add). VisionTransformer chains its blocks this way.
  std::pair<Tensor, Tensor> forward_normed(const Tensor& x, const Tensor& normed, const nn::Norm& next_norm) const;
  std::shared_ptr<nn::Norm> norm1, norm2;  ///< LayerNorm; RMSNorm in ViT-5
  std::shared_ptr<Attention> attn;
  std::shared_ptr<nn::Mlp> mlp;
  Tensor gamma_1, gamma_2;  ///< ViT-5's LayerScale; undefined otherwise

 private:
  double drop_path_;
};

class VisionTransformer : public nn::Module {
 public:
  explicit VisionTransformer(const ViTConfig& cfg);
  /// [B, C, H, W] → logits [B, num_classes]; num_classes 0: the CLS features [B, D] (MHLA: token mean, vit.cpp).
  Tensor forward(const Tensor& images) const;
  /// Tokens after the final norm, [B, prefix + N (+ registers), D] (prefix: CLS, then dist_token when distilled).
  Tensor forward_features(const Tensor& images) const;
  const ViTConfig& config() const { return cfg_; }

  Tensor cls_token, pos_embed;  ///< cls_token undefined with MHLA attention (no CLS token)
  Tensor dist_token;            ///< undefined unless distilled
  Tensor reg_token;             ///< ViT-5's registers [1, R, D]; undefined without
  std::shared_ptr<nn::PatchEmbed> patch_embed;
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<nn::Norm> norm;
  std::shared_ptr<nn::Linear> head;       ///< null when num_classes is 0
  std::shared_ptr<nn::Linear> head_dist;  ///< distilled models with classes only

 private:
  ViTConfig cfg_;
};

}  // namespace vt::models
