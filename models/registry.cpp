#include "models/registry.h"

#include <algorithm>

#include "core/error.h"

namespace vt::models {

namespace {
struct Preset {
  const char* name;
  int64_t img, patch, dim, depth, heads;
  bool distilled = false;
  bool vit5 = false;  // ViT-5 (ViTConfig::vit5) with 4 registers
};
// name, img_size, patch_size, embed_dim, depth, num_heads
constexpr Preset kPresets[] = {
    {"vit_micro", 28, 7, 96, 4, 4},
    {"deit_tiny_patch16_224", 224, 16, 192, 12, 3},
    {"deit_small_patch16_224", 224, 16, 384, 12, 6},
    {"deit_base_patch16_224", 224, 16, 768, 12, 12},
    {"deit_base_patch16_384", 384, 16, 768, 12, 12},
    // DeiT with the distillation token and head (timm's VisionTransformerDistilled).
    {"deit_tiny_distilled_patch16_224", 224, 16, 192, 12, 3, true},
    {"deit_small_distilled_patch16_224", 224, 16, 384, 12, 6, true},
    {"deit_base_distilled_patch16_224", 224, 16, 768, 12, 12, true},
    {"deit_base_distilled_patch16_384", 384, 16, 768, 12, 12, true},
    {"vit_tiny_patch16_224", 224, 16, 192, 12, 3},
    {"vit_small_patch16_224", 224, 16, 384, 12, 6},
    {"vit_base_patch16_224", 224, 16, 768, 12, 12},
    {"vit_large_patch16_224", 224, 16, 1024, 24, 16},
    // The AugReg 384² checkpoints that MiTA's Segmenter starts from (spec §5; configs set img_size 512 / 640).
    {"vit_tiny_patch16_384", 384, 16, 192, 12, 3},
    {"vit_small_patch16_384", 384, 16, 384, 12, 6},
    {"vit_base_patch16_384", 384, 16, 768, 12, 12},
    {"vit_large_patch16_384", 384, 16, 1024, 24, 16},
    // ViT-5 (the official MiTA-ViT-5 models_vit5.py's vit5_* names: 16² patches, 4 registers, RMSNorm, RoPE).
    {"vit5_small", 224, 16, 384, 12, 6, false, true},
    {"vit5_base", 224, 16, 768, 12, 12, false, true},
    {"vit5_large", 224, 16, 1024, 24, 16, false, true},
    {"vit5_xlarge", 224, 16, 1152, 28, 16, false, true},
};
}  // namespace

namespace {

// The resolved model must be buildable: each key is bounded by io::ModelConfig::validate, but their product
// (the preset's values included) can still ask for terabytes. ViT-22B has 2.2e10 parameters and ~1K tokens.
constexpr double kMaxParameters = 5e10, kMaxTokens = 1 << 22;

void check_size(const ViTConfig& v) {
  const double grid = static_cast<double>(v.img_size / std::max<int64_t>(v.patch_size, 1));
  const double tokens = grid * grid;
  VT_CHECK(tokens <= kMaxTokens, "[config] model.img_size ", v.img_size, " / model.patch_size ", v.patch_size,
           " gives ", tokens, " tokens, above the ", kMaxTokens, " a model can hold");
  const double d = static_cast<double>(v.embed_dim);
  const double params = static_cast<double>(v.depth) * d * d * (4 + 2 * v.mlp_ratio) + tokens * d +
                        static_cast<double>(v.patch_size * v.patch_size * v.in_chans) * d +
                        static_cast<double>(v.num_classes) * d;
  VT_CHECK(params <= kMaxParameters, "[config] model.embed_dim ", v.embed_dim, ", model.depth ", v.depth,
           ", model.mlp_ratio ", v.mlp_ratio, " (with the image, patch and class sizes) give about ", params,
           " parameters, above the limit of ", kMaxParameters);
}

}  // namespace

ViTConfig preset(const std::string& tagged_name) {
  // "deit_small_patch16_224.fb_in1k": the architecture is the part before timm's pretrained tag.
  const std::string name = tagged_name.substr(0, tagged_name.find('.'));
  for (const auto& p : kPresets) {
    if (name != p.name) continue;
    ViTConfig c;
    c.img_size = p.img;
    c.patch_size = p.patch;
    c.embed_dim = p.dim;
    c.depth = p.depth;
    c.num_heads = p.heads;
    c.distilled = p.distilled;
    c.vit5 = p.vit5;
    c.num_registers = p.vit5 ? 4 : 0;
    if (name == "vit_micro") {
      c.in_chans = 1;
      c.num_classes = 10;
    }
    return c;
  }
  std::string known;
  for (const auto& p : kPresets) known += std::string(known.empty() ? "" : ", ") + p.name;
  VT_FAIL("[model] unknown model name '", name, "' (known: ", known, ")");
}

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& p : kPresets) out.emplace_back(p.name);
  return out;
}

ViTConfig vit_config(const io::ModelConfig& m, uint64_t seed) {
  ViTConfig v = preset(m.name);
  if (m.img_size > 0) v.img_size = m.img_size;
  if (m.patch_size > 0) v.patch_size = m.patch_size;
  if (m.in_chans > 0) v.in_chans = m.in_chans;
  if (m.num_classes > 0) v.num_classes = m.num_classes;
  if (m.embed_dim > 0) v.embed_dim = m.embed_dim;
  if (m.depth > 0) v.depth = m.depth;
  if (m.num_heads > 0) v.num_heads = m.num_heads;
  v.mlp_ratio = m.mlp_ratio;
  v.drop_rate = m.drop_rate;
  v.drop_path_rate = m.drop_path_rate;
  v.layer_norm_eps = m.layer_norm_eps;
  v.attention = m.attention;
  v.seed = seed;
  check_size(v);
  return v;
}

}  // namespace vt::models
