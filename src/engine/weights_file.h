// One way to read any weights file: safetensors (timm's model.safetensors, our weights and training checkpoints)
// or a PyTorch checkpoint (.pth / .pt / .bin: a bare state dict, DeiT's {'model', 'model_ema', 'optimizer', ...},
// timm's {'state_dict', 'state_dict_ema'}, DDP's "module." prefix). The format is told by the file's first bytes,
// not its name. Every reader of weights (eval, seg-eval, convert, fine-tuning init, viz) goes through here.
#pragma once
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace vt::engine {

/// Which weights of a training checkpoint to take: the raw model or its EMA.
enum class WeightsPick { weights, ema };

struct WeightsFile {
  io::NamedTensors tensors;  ///< the chosen weights, names without "module.", "ema." or "optim." prefixes
  std::string format;        ///< "safetensors" | "torch"
  /// What was left out of the file: "optimizer state (N tensors)", "EMA weights (N tensors)", torch top-level
  /// entries ("optimizer", "epoch", ...). Empty for a plain weights file.
  std::vector<std::string> left_out;
  std::string source;  ///< which weights were taken: "" (the file is the weights), "model", "model_ema", "ema."...
};

/// Reads `path`. Our training checkpoints (safetensors with `ema.<name>` / `optim.<key>` tensors) give their model
/// or EMA weights; torch checkpoints the state dict io::read_torch_checkpoint picks. Asking for EMA weights of a
/// file that has none is an error naming the file. Errors name the file.
WeightsFile load_weights_file(const std::string& path, WeightsPick pick = WeightsPick::weights);

/// True when `path` names a PyTorch output by its extension (.pth, .pt, .bin): where convert writes torch format.
bool is_torch_path(const std::string& path);

}  // namespace vt::engine
