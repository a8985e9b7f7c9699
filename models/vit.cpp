#include "models/vit.h"

#include <algorithm>
#include <tuple>

#include "nn/init.h"
#include "ops/ops.h"

namespace vt::models {

namespace {
// Holds the blocks so their keys read blocks.0..., as timm's nn.Sequential does.
struct BlockList : nn::Module {
  void add(const std::shared_ptr<Block>& b) { register_module(std::to_string(count++), b); }
  int count = 0;
};

// MHLA's layout (ViTConfig::token_grid): no CLS token, a padded image, the mean token classified.
bool block_layout(const ViTConfig& c) { return c.attention.type == "mhla"; }

int64_t padded_size(const ViTConfig& c) { return c.patch_size > 0 ? c.token_grid() * c.patch_size : c.img_size; }

// images [B, C, S, S] → [B, C, S + pad, S + pad], zeros split evenly (the extra one after, for an odd pad).
Tensor zero_pad(const Tensor& images, int64_t pad) {
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3), lo = pad / 2;
  auto zeros = [&](int64_t h, int64_t w) { return Tensor::zeros({B, C, h, w}, images.dtype(), images.device()); };
  Tensor x = ops::concat({zeros(H, lo), images, zeros(H, pad - lo)}, 3);
  return ops::concat({zeros(lo, W + pad), x, zeros(pad - lo, W + pad)}, 2);
}
}  // namespace

int64_t ViTConfig::token_grid() const {
  if (patch_size <= 0) return 0;
  const int64_t G = img_size / patch_size;
  return attention.type == "mhla" ? std::max<int64_t>(8, (G + 3) / 4 * 4) : G;
}

int64_t ViTConfig::num_tokens() const {
  const int64_t grid = token_grid();
  return grid > 0 ? num_prefix_tokens() + grid * grid + (vit5 ? num_registers : 0) : 0;
}

namespace {
std::shared_ptr<nn::Norm> make_norm(const ViTConfig& cfg) {
  if (cfg.vit5) return std::make_shared<nn::RMSNorm>(cfg.embed_dim, cfg.layer_norm_eps);
  return std::make_shared<nn::LayerNorm>(cfg.embed_dim, cfg.layer_norm_eps);
}

Tensor scaled(const Tensor& gamma, const Tensor& branch) { return gamma.defined() ? gamma * branch : branch; }
}  // namespace

Block::Block(const ViTConfig& cfg, double drop_path, Generator& gen) : drop_path_(drop_path) {
  const int64_t D = cfg.embed_dim;
  norm1 = register_module("norm1", make_norm(cfg));
  // The token count lets make_attention check the shape-dependent settings (model.attention.m, k, ...) now;
  // 0 (unknown) without a patch grid (patch_size 0: models/sequence_model's blocks see any N).
  Vit5Attention vit5;
  vit5.enabled = cfg.vit5;
  vit5.grid = cfg.token_grid();
  vit5.registers = cfg.num_registers;
  attn = register_module("attn",
                         make_attention(cfg.attention, D, cfg.num_heads, cfg.drop_rate, gen, cfg.num_tokens(), vit5));
  norm2 = register_module("norm2", make_norm(cfg));
  mlp =
      register_module("mlp", std::make_shared<nn::Mlp>(D, static_cast<int64_t>(D * cfg.mlp_ratio), cfg.drop_rate, gen));
  if (cfg.vit5) {  // models_vit5.py's Block: init_values 1e-4
    gamma_1 = register_parameter("gamma_1", Tensor::full({D}, 1e-4));
    gamma_2 = register_parameter("gamma_2", Tensor::full({D}, 1e-4));
  }
}

Tensor Block::forward(const Tensor& x) const {
  Tensor h = x + ops::drop_path(scaled(gamma_1, attn->forward(norm1->forward(x))), drop_path_, training());
  return h + ops::drop_path(scaled(gamma_2, mlp->forward(norm2->forward(h))), drop_path_, training());
}

std::pair<Tensor, Tensor> Block::forward_normed(const Tensor& x, const Tensor& normed,
                                                const nn::Norm& next_norm) const {
  const auto [h, h_normed] =
      norm2->forward_add(x, ops::drop_path(scaled(gamma_1, attn->forward(normed)), drop_path_, training()));
  return next_norm.forward_add(h, ops::drop_path(scaled(gamma_2, mlp->forward(h_normed)), drop_path_, training()));
}

VisionTransformer::VisionTransformer(const ViTConfig& cfg) : cfg_(cfg) {
  VT_CHECK(cfg.embed_dim > 0 && cfg.depth > 0 && cfg.num_heads > 0 && cfg.num_classes >= 0,
           "[model] embed_dim, depth and num_heads must be positive and num_classes not negative");
  VT_CHECK(!cfg.distilled || cfg.attention.type == "dense",
           "[model] a distilled DeiT (dist_token) needs dense "
           "attention; model.attention.type is '",
           cfg.attention.type, "'");
  VT_CHECK(!cfg.vit5 || !cfg.distilled, "[model] a ViT-5 model has no distillation token");
  VT_CHECK(cfg.num_registers == 0 || cfg.vit5, "[model] register tokens belong to the ViT-5 models");
  Generator gen(cfg.seed);
  const int64_t D = cfg.embed_dim;
  // The image itself must cut into whole patches (MHLA then pads whole patches around it).
  VT_CHECK(cfg.patch_size > 0 && cfg.img_size % cfg.patch_size == 0, "[model] img_size ", cfg.img_size,
           " is not a multiple of patch_size ", cfg.patch_size);
  patch_embed = register_module(
      "patch_embed", std::make_shared<nn::PatchEmbed>(padded_size(cfg), cfg.patch_size, cfg.in_chans, D, gen));
  if (!block_layout(cfg)) cls_token = register_parameter("cls_token", Tensor::empty({1, 1, D}));
  // ViT-5 adds pos_embed to the patches alone (CLS and registers take their place from the rotary embedding).
  const int64_t positioned = (cfg.vit5 ? 0 : cfg.num_prefix_tokens()) + patch_embed->num_patches();
  pos_embed = register_parameter("pos_embed", Tensor::empty({1, positioned, D}));
  // timm 0.4.12, which DeiT and MiTA train with: trunc_normal(0.02) for both (newer timm uses std 1e-6 for cls).
  if (cls_token.defined()) nn::init::trunc_normal(cls_token, 0.02, gen);
  nn::init::trunc_normal(pos_embed, 0.02, gen);
  if (cfg.distilled) {
    dist_token = register_parameter("dist_token", Tensor::empty({1, 1, D}));
    nn::init::trunc_normal(dist_token, 0.02, gen);
  }
  if (cfg.num_registers > 0) {
    VT_CHECK(square_side(cfg.num_registers) > 0, "[model] ViT-5's register count must be a square number, got ",
             cfg.num_registers);
    reg_token = register_parameter("reg_token", Tensor::empty({1, cfg.num_registers, D}));
    nn::init::trunc_normal(reg_token, 0.02, gen);
  }
  auto list = register_module("blocks", std::make_shared<BlockList>());
  for (int64_t i = 0; i < cfg.depth; ++i) {
    // Stochastic depth rises linearly from 0 to drop_path_rate over the blocks (timm); ViT-5 uses the rate in all.
    double dpr = cfg.vit5        ? cfg.drop_path_rate
                 : cfg.depth > 1 ? cfg.drop_path_rate * static_cast<double>(i) / static_cast<double>(cfg.depth - 1)
                                 : 0.0;
    blocks.push_back(std::make_shared<Block>(cfg, dpr, gen));
    list->add(blocks.back());
  }
  norm = register_module("norm", make_norm(cfg));
  // num_classes 0: no classifier (timm's nn.Identity head), e.g. a segmentation backbone.
  if (cfg.num_classes > 0) head = register_module("head", std::make_shared<nn::Linear>(D, cfg.num_classes, true, gen));
  if (cfg.num_classes > 0 && cfg.distilled)
    head_dist = register_module("head_dist", std::make_shared<nn::Linear>(D, cfg.num_classes, true, gen));
}

Tensor VisionTransformer::forward_features(const Tensor& images) const {
  const int64_t pad = padded_size(cfg_) - cfg_.img_size;
  if (pad > 0)
    VT_CHECK(images.dim() == 4 && images.size(2) == cfg_.img_size && images.size(3) == cfg_.img_size,
             "[patch_embed] expected input [B, ", cfg_.in_chans, ", ", cfg_.img_size, ", ", cfg_.img_size, "], got ",
             images.describe());
  Tensor x = patch_embed->forward(pad > 0 ? zero_pad(images, pad) : images);  // [B, N, D]; bf16 under autocast
  const int64_t B = x.size(0);
  // The residual stream is in the parameters' dtype (f32), as torch.cat promotes under timm's AMP.
  if (x.dtype() != pos_embed.dtype()) x = x.to(pos_embed.dtype());
  if (cfg_.distilled)
    x = ops::concat({cls_token.expand({B, 1, cfg_.embed_dim}), dist_token.expand({B, 1, cfg_.embed_dim}), x}, 1);
  else if (cls_token.defined() && !cfg_.vit5)  // MHLA's layout has no prefix tokens
    x = ops::concat({cls_token.expand({B, 1, cfg_.embed_dim}), x}, 1);
  if (cfg_.vit5) {  // [CLS, patches + pos_embed, registers]; models_vit5.py has no dropout here
    std::vector<Tensor> parts = {cls_token.expand({B, 1, cfg_.embed_dim}), x + pos_embed};
    if (reg_token.defined()) parts.push_back(reg_token.expand({B, cfg_.num_registers, cfg_.embed_dim}));
    x = ops::concat(parts, 1);
  } else {
    x = ops::dropout(x + pos_embed, cfg_.drop_rate, training());
  }
  Tensor normed = blocks[0]->norm1->forward(x);  // then each block hands on the next norm's input, fused
  for (size_t i = 0; i < blocks.size(); ++i) {
    const nn::Norm& next = i + 1 < blocks.size() ? *blocks[i + 1]->norm1 : *norm;
    std::tie(x, normed) = blocks[i]->forward_normed(x, normed, next);
  }
  return normed;
}

Tensor VisionTransformer::forward(const Tensor& images) const {
  Tensor x = forward_features(images);
  Tensor cls = block_layout(cfg_) ? ops::mean(x, {1}) : x.slice(1, 0, 1).squeeze(1);  // [B, D]
  if (cfg_.distilled) {
    Tensor dist = x.slice(1, 1, 2).squeeze(1);
    if (!head) return (cls + dist) * 0.5;  // timm's pre-logits of the distilled model
    return (head->forward(ops::dropout(cls, cfg_.drop_rate, training())) +
            head_dist->forward(ops::dropout(dist, cfg_.drop_rate, training()))) *
           0.5;
  }
  if (!head) return cls;  // pre-logits features [B, D]
  return head->forward(ops::dropout(cls, cfg_.drop_rate, training()));
}

}  // namespace vt::models
