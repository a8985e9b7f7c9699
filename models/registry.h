// Model presets by name: timm's DeiT/ViT names plus the small `vit_micro` of the Fashion-MNIST demo.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "models/vit.h"

namespace vt::models {

/// The preset's architecture (dims, depth, heads, patch, image size); throws naming `name` if unknown.
ViTConfig preset(const std::string& name);
std::vector<std::string> preset_names();

}  // namespace vt::models
