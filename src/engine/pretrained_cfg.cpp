// The values are timm's default_cfgs (timm/models/deit.py and vision_transformer.py): DeiT's _cfg uses
// IMAGENET_DEFAULT_MEAN/STD, ViT's IMAGENET_INCEPTION_MEAN/STD (0.5); crop_pct 0.9 at 224, 1.0 at 384; bicubic.
#include "engine/pretrained_cfg.h"

#include "core/error.h"

namespace vt::engine {

namespace {

constexpr std::array<double, 3> kImagenetMean{0.485, 0.456, 0.406}, kImagenetStd{0.229, 0.224, 0.225};
constexpr std::array<double, 3> kInceptionMean{0.5, 0.5, 0.5}, kInceptionStd{0.5, 0.5, 0.5};

PretrainedCfg deit(const char* tag, int img) {
  return {tag, kImagenetMean, kImagenetStd, img == 384 ? 1.0 : 0.9, "center", "bicubic", img, 1000};
}
PretrainedCfg vit(const char* tag, int img, int classes = 1000) {
  return {tag, kInceptionMean, kInceptionStd, img == 384 ? 1.0 : 0.9, "center", "bicubic", img, classes};
}

}  // namespace

const std::vector<PretrainedCfg>& pretrained_cfgs() {
  static const std::vector<PretrainedCfg> table = {
      deit("deit_tiny_patch16_224.fb_in1k", 224),
      deit("deit_small_patch16_224.fb_in1k", 224),
      deit("deit_base_patch16_224.fb_in1k", 224),
      deit("deit_base_patch16_384.fb_in1k", 384),
      deit("deit_tiny_distilled_patch16_224.fb_in1k", 224),
      deit("deit_small_distilled_patch16_224.fb_in1k", 224),
      deit("deit_base_distilled_patch16_224.fb_in1k", 224),
      deit("deit_base_distilled_patch16_384.fb_in1k", 384),
      vit("vit_tiny_patch16_224.augreg_in21k_ft_in1k", 224),
      vit("vit_tiny_patch16_384.augreg_in21k_ft_in1k", 384),
      vit("vit_small_patch16_224.augreg_in21k_ft_in1k", 224),
      vit("vit_small_patch16_384.augreg_in21k_ft_in1k", 384),
      vit("vit_small_patch16_224.augreg_in1k", 224),
      vit("vit_small_patch16_384.augreg_in1k", 384),
      vit("vit_base_patch16_224.augreg2_in21k_ft_in1k", 224),
      vit("vit_base_patch16_224.augreg_in21k_ft_in1k", 224),
      vit("vit_base_patch16_384.augreg_in21k_ft_in1k", 384),
      vit("vit_base_patch16_224.augreg_in1k", 224),
      vit("vit_base_patch16_384.augreg_in1k", 384),
      vit("vit_base_patch16_224.orig_in21k_ft_in1k", 224),
      vit("vit_base_patch16_384.orig_in21k_ft_in1k", 384),
      vit("vit_large_patch16_224.augreg_in21k_ft_in1k", 224),
      vit("vit_large_patch16_384.augreg_in21k_ft_in1k", 384),
      vit("vit_tiny_patch16_224.augreg_in21k", 224, 21843),
      vit("vit_small_patch16_224.augreg_in21k", 224, 21843),
      vit("vit_base_patch16_224.augreg_in21k", 224, 21843),
      vit("vit_large_patch16_224.augreg_in21k", 224, 21843),
  };
  return table;
}

const PretrainedCfg* find_pretrained_cfg(const std::string& model_name) {
  const size_t dot = model_name.find('.');
  if (dot == std::string::npos) return nullptr;
  const std::string arch = model_name.substr(0, dot + 1);
  std::string known;
  for (const PretrainedCfg& c : pretrained_cfgs()) {
    if (model_name == c.tag) return &c;
    if (std::string(c.tag).rfind(arch, 0) == 0) known += (known.empty() ? "" : ", ") + std::string(c.tag);
  }
  VT_FAIL("[model] unknown pretrained tag '", model_name, "'",
          known.empty() ? std::string(" (no tags for this architecture)") : " (known: " + known + ")");
}

void apply_pretrained_cfg(io::Config& cfg) {
  const PretrainedCfg* p = find_pretrained_cfg(cfg.model.name);
  if (!p) return;
  const io::Config defaults;
  if (cfg.data.mean.empty()) cfg.data.mean.assign(p->mean.begin(), p->mean.end());
  if (cfg.data.std.empty()) cfg.data.std.assign(p->std.begin(), p->std.end());
  if (cfg.data.crop_pct == defaults.data.crop_pct) cfg.data.crop_pct = p->crop_pct;
  if (cfg.model.img_size == 0) cfg.model.img_size = p->img_size;
  if (cfg.model.num_classes == 0) cfg.model.num_classes = p->num_classes;
}

}  // namespace vt::engine
