// Training checkpoints: one safetensors file per checkpoint, written atomically (temporary name, fsync, rename)
// so a crash mid-write leaves the previous file intact. Layout:
//   <timm name>          the model's weights, unprefixed, so the file also loads as plain timm weights
//   ema.<timm name>      the EMA weights (when train.model_ema)
//   optim.<key>          the optimizer state (Optimizer::state(): step, lr, per-parameter moments)
//   __metadata__         format/version, the position (epoch, step in epoch, global update), best metric,
//                        the RNG states and the resolved config, all as strings (doubles in shortest exact text)
// The data order needs no state of its own: ImageBatches derives it from (seed, epoch, index).
#pragma once
#include <cstdint>
#include <string>

#include "io/safetensors.h"

namespace vt::engine {

/// Where training stands: the next optimizer update to run is `step_in_epoch` of `epoch` (0-based); `global_step`
/// updates have been applied in total.
struct TrainPosition {
  int64_t epoch = 0, step_in_epoch = 0, global_step = 0;
};

/// Everything besides tensors that a resumed run needs.
struct CheckpointState {
  TrainPosition position;
  double best_metric = 0;   ///< the best value of eval.best_metric so far (meaningful when best_epoch >= 0)
  int64_t best_epoch = -1;  ///< 1-based epoch of best_metric; -1: no evaluation yet
  uint64_t rng_seed = 0, rng_offset = 0;  ///< the default generator (dropout, drop-path)
  uint64_t data_seed = 0;                 ///< the seed of the training batch order and flips
  std::string config_yaml;                ///< the resolved config of the run that wrote it
};

struct Checkpoint {
  io::NamedTensors model, ema, optimizer;  ///< host tensors; ema is empty without train.model_ema
  CheckpointState state;
};

/// Writes `ckpt` to `path` atomically. Throws vt::Error naming the path on failure.
void save_checkpoint(const std::string& path, const Checkpoint& ckpt);

/// Reads a checkpoint written by save_checkpoint. A truncated or corrupt file, a plain weights file or any other
/// foreign file is rejected with a vt::Error naming the path and the problem.
Checkpoint load_checkpoint(const std::string& path);

/// load_checkpoint for a file already read (`path` names it in errors).
Checkpoint load_checkpoint(io::SafetensorsFile file, const std::string& path);

/// True when a safetensors file's metadata marks it as a training checkpoint of save_checkpoint.
bool is_training_checkpoint(const std::map<std::string, std::string>& metadata);

/// The global update count stored in a checkpoint (reads the whole file and validates it).
int64_t checkpoint_global_step(const std::string& path);

}  // namespace vt::engine
