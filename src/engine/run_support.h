// The pieces of a training run around the loop (engine/train_loop): threads, the run's logger, the optimizer a
// config names, host copies of weights, the device line, the checkpoint file names of an output folder, and the
// run's opening (start_run).
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "core/device.h"
#include "engine/checkpoint.h"
#include "engine/run_record.h"
#include "engine/process_group.h"
#include "engine/trainer.h"
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

/// The run's logger "vitrain": the console and `log_path` (truncated, or appended to: a resumed run), "[HH:MM:SS]
/// message".
std::shared_ptr<spdlog::logger> make_logger(const std::string& log_path, bool truncate = true);

/// optim.opt over the model's timm parameter groups (no decay on 1-D tensors and tokens): adamw, or SGD as
/// timm's create_optimizer: "sgd" and "nesterov" are Nesterov momentum, "momentum" plain momentum.
std::unique_ptr<optim::Optimizer> make_optimizer(const io::Config& cfg, const nn::Module& model);

/// The module's state dict as host tensors, so it can be written wherever the model lives.
io::NamedTensors host_state_dict(const nn::Module& model);

/// The metadata of a run's final model.safetensors: model (name), attention, and decoder for segmentation.
std::map<std::string, std::string> weights_metadata(const io::Config& cfg);

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

/// The opening of a training run, the same for every task: the output folder and its files, the checkpoint to
/// resume from (train.resume with "auto" resolved through choose_resume_checkpoint, which logs what it skipped;
/// "" for a fresh start) loaded, metrics.jsonl cut back to it (rank 0), the process group (`given`: a test's
/// in-process communicator), the logger (rank 0: console + train.log; other ranks: warnings), the resolved config
/// written by rank 0 to config.yaml, and the first log lines (data parallel, device with `amp`).
struct RunStart {
  RunFiles files;
  std::string resume_path;
  Checkpoint resumed;  ///< the checkpoint at resume_path (empty for a fresh start)
  ProcessGroup group;
  std::shared_ptr<spdlog::logger> log;
  std::string config_yaml;
  /// The summary's file paths (train.log, metrics.jsonl, model.safetensors) and device, the rest at defaults.
  RunSummary summary() const;
  /// True (after logging that the run is finished, and marking `summary` already_finished with the checkpoint's
  /// updates and best metric) when the resumed checkpoint already completed train.epochs. A run killed after its
  /// last checkpoint but before model.safetensors was written gets that file from the checkpoint here.
  bool finished(const io::Config& cfg, RunSummary& summary) const;
};
RunStart start_run(const io::Config& cfg, dist::Communicator* given, std::optional<DType> amp);

}  // namespace vt::engine
