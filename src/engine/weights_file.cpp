#include "engine/weights_file.h"

#include <algorithm>
#include <cctype>

#include "engine/checkpoint.h"
#include "io/torch_checkpoint.h"

namespace vt::engine {

namespace {

bool ends_with_ci(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

// Names written by DistributedDataParallel's wrapper keep a "module." in front; the torch reader strips it too.
void strip_module_prefix(io::NamedTensors& tensors) {
  const std::string prefix = "module.";
  if (tensors.empty() ||
      !std::all_of(tensors.begin(), tensors.end(), [&](const auto& nt) { return nt.first.rfind(prefix, 0) == 0; }))
    return;
  for (auto& [name, t] : tensors) name = name.substr(prefix.size());
}

WeightsFile from_safetensors(const std::string& path, WeightsPick pick) {
  io::SafetensorsFile file = io::read_safetensors(path);
  WeightsFile out;
  out.format = "safetensors";
  if (!is_training_checkpoint(file.metadata)) {
    VT_CHECK(pick == WeightsPick::weights, "[weights] '", path, "' is a plain weights file with no EMA weights; ",
             "drop --ema");
    out.tensors = std::move(file.tensors);
    strip_module_prefix(out.tensors);
    return out;
  }
  Checkpoint ckpt = load_checkpoint(std::move(file), path);
  if (!ckpt.optimizer.empty())
    out.left_out.push_back("optimizer state (" + std::to_string(ckpt.optimizer.size()) + " tensors)");
  if (pick == WeightsPick::ema) {
    VT_CHECK(!ckpt.ema.empty(), "[weights] '", path, "' is a training checkpoint without EMA weights ",
             "(train.model_ema was off); drop --ema");
    out.tensors = std::move(ckpt.ema);
    out.source = "ema.";
    out.left_out.push_back("raw weights (" + std::to_string(ckpt.model.size()) + " tensors)");
  } else {
    out.tensors = std::move(ckpt.model);
    if (!ckpt.ema.empty()) out.left_out.push_back("EMA weights (" + std::to_string(ckpt.ema.size()) + " tensors)");
  }
  return out;
}

}  // namespace

bool is_torch_path(const std::string& path) {
  return ends_with_ci(path, ".pth") || ends_with_ci(path, ".pt") || ends_with_ci(path, ".bin");
}

WeightsFile load_weights_file(const std::string& path, WeightsPick pick) {
  if (!io::is_torch_checkpoint(path)) return from_safetensors(path, pick);
  io::TorchCheckpoint ckpt =
      io::read_torch_checkpoint(path, pick == WeightsPick::ema ? io::TorchPick::ema : io::TorchPick::weights);
  WeightsFile out;
  out.format = "torch";
  out.tensors = std::move(ckpt.tensors);
  out.source = ckpt.source_key;
  out.left_out = std::move(ckpt.other_keys);
  VT_CHECK(!out.tensors.empty(), "[weights] '", path, "' holds no tensors");
  return out;
}

}  // namespace vt::engine
