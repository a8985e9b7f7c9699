// Weights exchange with timm: load timm/DeiT safetensors into our ViTs (position embedding resampled to another
// grid, classifier dropped or replaced for another class count, dense weights into any attention kind) and
// export ours so that timm's VisionTransformer.load_state_dict accepts them. Our parameter names are timm's.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "engine/trainer.h"
#include "io/safetensors.h"
#include "models/segmenter.h"
#include "models/vit.h"

namespace vt::engine {

/// How pos_embed is resampled: `timm` = F.interpolate(bicubic, align_corners=False, antialias=True) as timm's
/// resample_abs_pos_embed (PIL's cubic, a = -0.5, taps renormalised at the borders); `deit` = plain bicubic
/// (a = -0.75, clamped borders) as DeiT's fine-tuning code; `bilinear` = F.interpolate(bilinear,
/// align_corners=False), what timm 0.4.12 and Segmenter use for the segmentation backbones. All keep the prefix
/// (CLS) tokens unchanged.
enum class PosEmbedResize { timm, deit, bilinear };

/// pos_embed [1, prefix + old_h·old_w, C] resampled to [1, prefix + new_h·new_w, C] in f32 (width, then height,
/// like PyTorch's CPU kernel); returned unchanged when the grid is the same.
Tensor resample_pos_embed(const Tensor& pos_embed, int64_t old_h, int64_t old_w, int64_t new_h, int64_t new_w,
                          int64_t num_prefix_tokens = 1, PosEmbedResize mode = PosEmbedResize::timm);

/// What to do with weights that do not fit the target architecture.
struct TimmAdaptOptions {
  PosEmbedResize resize = PosEmbedResize::timm;
  bool zero_new_head = false;  ///< another class count: a zero head [K, C] (true) instead of no head (false)
  bool adapt_head = true;      ///< false: leave head.* / head_dist.* as they are (strict loading names a mismatch)
};

/// Adapts timm-named weights in place to `target`: floating tensors cast to f32; pos_embed resampled from its
/// (square) grid to target's, the prefix tokens (CLS, dist_token) kept; head.* and head_dist.* dropped or
/// zero-replaced when the class count differs (target.num_classes 0: always dropped). Returns one human-readable line per change ("pos_embed: grid 14x14 -> 16x16 (timm bicubic)").
std::vector<std::string> adapt_timm_weights(io::NamedTensors& weights, const models::ViTConfig& target,
                                            const TimmAdaptOptions& options = {});

/// The architecture that timm-named weights describe (embed dim, depth, patch, channels, square image size,
/// classes, MLP ratio, distilled when dist_token is there; num_heads = embed_dim / 64 as in timm's presets, since
/// weights do not fix it).
models::ViTConfig infer_vit_config(const io::NamedTensors& weights);

/// Names and shapes of timm's VisionTransformer(cfg).state_dict() (class token, no register tokens, token
/// pooling, dense attention; VisionTransformerDistilled's dist_token and head_dist when cfg.distilled), in timm's
/// order; no head.* when cfg.num_classes is 0.
std::vector<std::pair<std::string, Shape>> timm_state_dict_spec(const models::ViTConfig& cfg);

/// Throws, naming the tensor, unless `weights` hold exactly timm_state_dict_spec(cfg): same names and shapes,
/// all F32 (what `model.load_state_dict(load_file(path))` in timm needs).
void check_timm_compatible(const io::NamedTensors& weights, const models::ViTConfig& cfg);

/// The result of load_timm_weights.
struct TimmLoadReport {
  std::vector<std::string> adapted;  ///< adapt_timm_weights' lines
  WeightLoadReport load;             ///< load_weights_compatible's report (other attention kinds)
};

/// Loads timm/DeiT weights into `model` for evaluation or fine-tuning: adapt_timm_weights to model.config()
/// (a dropped head keeps the model's own initial head), then load_weights_compatible (dense qkv/proj into MiTA,
/// Agent, ...). Every change is logged (spdlog info) and returned.
TimmLoadReport load_timm_weights(models::VisionTransformer& model, io::NamedTensors weights,
                                 const TimmAdaptOptions& options = {});

/// Loads a timm-format ViT safetensors (e.g. vit_small_patch16_384) into seg.encoder: pos_embed resampled
/// bilinearly (align_corners=False) from its grid to the crop's grid, head and other unused tensors skipped with a
/// report; dense qkv/proj go into MiTA. Errors name the file and tensor.
WeightLoadReport load_segmenter_backbone(models::Segmenter& seg, const std::string& path);

/// The model's weights as host f32 copies in timm's order, checked by check_timm_compatible; a model with
/// tensors timm's ViT lacks (MiTA DWC/gate, agent tokens) is an error naming them.
io::NamedTensors export_timm_weights(const models::VisionTransformer& model);

}  // namespace vt::engine
