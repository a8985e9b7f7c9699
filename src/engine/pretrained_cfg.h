// timm's pretrained tags: `model.name: deit_small_patch16_224.fb_in1k` names the architecture (before the dot)
// and the weights' pretrained configuration (timm's default_cfgs entry): the normalisation, the eval crop, the
// input size and the class count the weights were made for. Evaluation applies them to every key the config
// leaves at its default.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "io/config.h"

namespace vt::engine {

struct PretrainedCfg {
  const char* tag;  ///< "deit_small_patch16_224.fb_in1k"
  std::array<double, 3> mean, std;
  double crop_pct;
  const char* crop_mode;      ///< timm's crop_mode; every listed tag is "center"
  const char* interpolation;  ///< every listed tag is "bicubic", what our eval transform does
  int img_size;
  int num_classes;
};

/// Every supported tag, in table order (the README lists them).
const std::vector<PretrainedCfg>& pretrained_cfgs();

/// The configuration of a tagged model name; nullptr for a bare architecture name ("deit_small_patch16_224").
/// An unknown tag is an error listing the architecture's known tags.
const PretrainedCfg* find_pretrained_cfg(const std::string& model_name);

/// Applies the tag of cfg.model.name to what the config leaves at its default: data.mean / data.std (empty),
/// data.crop_pct (0.875), model.img_size and model.num_classes (0). A config value always wins.
void apply_pretrained_cfg(io::Config& cfg);

}  // namespace vt::engine
