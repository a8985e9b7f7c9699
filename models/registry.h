// Model presets by name: timm's DeiT/ViT names plus the small `vit_micro` of the Fashion-MNIST demo.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "io/config.h"
#include "models/vit.h"

namespace vt::models {

/// The preset's architecture (dims, depth, heads, patch, image size); throws naming `name` if unknown. A timm
/// pretrained tag after a dot ("deit_small_patch16_224.fb_in1k") is ignored here (engine/pretrained_cfg).
ViTConfig preset(const std::string& name);
std::vector<std::string> preset_names();

/// The architecture a model: section asks for: the named preset with the section's overrides (sizes when > 0,
/// rates, LayerNorm eps, attention) and `seed` for the initialisation.
ViTConfig vit_config(const io::ModelConfig& m, uint64_t seed);

}  // namespace vt::models
