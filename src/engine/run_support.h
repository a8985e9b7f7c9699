// The pieces of a training run that the classification (trainer) and segmentation (seg_trainer) loops share:
// threads, the run's logger, the optimizer a config names, host copies of weights for checkpoints, the device
// line, and the checkpoint file names of an output folder.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "core/device.h"
#include "core/dtype.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "nn/module.h"
#include "optim/optimizer.h"

namespace vt::engine {

using RunClock = std::chrono::steady_clock;
/// Seconds elapsed since `t0`.
double seconds_since(RunClock::time_point t0);

/// Sets the OpenMP and OpenBLAS thread counts (train.threads); 0 leaves them as they are.
void set_threads(int threads);

/// The run's logger "vitrain": the console and `log_path` (truncated), "[HH:MM:SS] message".
std::shared_ptr<spdlog::logger> make_logger(const std::string& log_path);

/// optim.opt over the model's timm parameter groups (no decay on 1-D tensors and tokens): adamw, or SGD as
/// timm's create_optimizer: "sgd" and "nesterov" are Nesterov momentum, "momentum" plain momentum.
std::unique_ptr<optim::Optimizer> make_optimizer(const io::Config& cfg, const nn::Module& model);

/// The module's state dict as host tensors, so it can be written wherever the model lives.
io::NamedTensors host_state_dict(const nn::Module& model);

/// "cuda:0 (bf16 autocast)", "cpu (8 threads) (auto: no GPU)", ... for the run's first lines.
std::string describe_device(Device device, std::optional<DType> amp, const std::string& spec);

/// Checkpoint file names of one run folder (see checkpoint.h): last, best, recovery, checkpoint-<epoch>.
struct RunFiles {
  std::filesystem::path dir;
  /// dir / name.
  std::string path(const std::string& name) const { return (dir / name).string(); }
  /// dir / checkpoint-<epoch>.safetensors.
  std::string epoch_path(int64_t epoch) const { return path("checkpoint-" + std::to_string(epoch) + ".safetensors"); }
  /// Deletes all but the newest `keep` checkpoint-<epoch> files.
  void prune_epoch_checkpoints(int keep) const;
};

}  // namespace vt::engine
