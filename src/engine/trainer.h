// The training and evaluation loops for image classification: explicit steps, no callbacks.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "data/image_batches.h"
#include "engine/weights_load.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "models/vit.h"

namespace vt::dist {
class Communicator;
}

namespace vt::engine {

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;  // top1/top5 in percent
  int64_t count = 0;
  int64_t params = 0;     // evaluate_weights only: the model's parameter count
  double img_per_s = 0;   // evaluate_weights only: evaluation throughput
  int64_t bad_files = 0;  // ImageFolder: unreadable val/ images, left out of count and metrics
};

/// What every training run reports besides its scores (TrainSummary, SegTrainSummary).
struct RunSummary {
  double best_metric = 0;  // best eval.best_metric value; best_epoch 1-based, -1: never evaluated
  int64_t best_epoch = -1;
  int64_t steps = 0;                  // optimizer updates applied in total (including before a resume)
  bool stopped_at_max_steps = false;  // train.max_steps ended the run (a recovery checkpoint was written)
  int stop_signal = 0;                // SIGINT/SIGTERM/SIGUSR1 ended the run (a recovery checkpoint was written)
  bool already_finished = false;      // the resumed checkpoint had completed train.epochs: nothing was trained
  double train_img_per_s = 0, train_seconds = 0;
  std::string device;  // "cpu" or "cuda:N"
  std::string weights_path, metrics_path, log_path;
};

struct TrainSummary : RunSummary {
  EvalResult test;
  std::optional<EvalResult> test_ema;  // the last evaluation of the EMA weights (train.model_ema)
};

/// The model architecture a config asks for: the named preset with the config's overrides.
models::ViTConfig vit_config(const io::Config& cfg);

/// The autocast dtype a config asks for: bf16 when train.amp is on (only used on CUDA), else none.
std::optional<DType> amp_dtype(const io::Config& cfg);

/// Optional observers of a run (tests, tools).
struct TrainHooks {
  /// Called after every optimizer update with the 1-based global update number and its loss (the mean over its
  /// micro-batches). Setting it makes every update wait for the device.
  std::function<void(int64_t step, double loss)> on_update;
  /// Runs as rank communicator->rank() of a data-parallel job over this communicator (tests: ranks as threads
  /// with a dist::ThreadCommunicator) instead of the job the launch environment describes. Not owned.
  dist::Communicator* communicator = nullptr;
  /// Polled once per update instead of the process's stop signals (engine/run_stop.h): non-zero asks this rank to
  /// stop as if that signal had arrived (tests: one rank of threads stops them all).
  std::function<int()> stop_signal;
};

/// Trains the configured ViT on Fashion-MNIST or an ImageFolder through the training loop (engine/train_loop.h),
/// evaluating the model and its EMA (top-1, top-5, loss) on the test split every eval.interval epochs.
TrainSummary train(const io::Config& cfg, const TrainHooks& hooks = {});

/// What load_weights_compatible did besides plain name-for-name copies.
struct WeightLoadReport {
  std::vector<std::string> ignored;  // tensors in the weights the model has no use for (e.g. dwc.*, agent biases)
  std::vector<std::string> adapted;  // "blocks.0.attn.qkv.weight <- blocks.0.attn.qkvg.weight[:3C]"
};

/// Loads weights written by a model with another attention kind (the paper's Appendix C swap): tensors the model
/// lacks are ignored (listed in the report), a gated model's `qkvg` [4C, ...] supplies `qkv` (its q, k, v rows)
/// when the model has no gate. A tensor the model needs that the weights lack, or a shape mismatch, is an error
/// naming the tensor.
WeightLoadReport load_weights_compatible(nn::Module& model, const io::NamedTensors& weights);

/// How `vitrain eval` loads and runs: which weights, how strictly, in which precision.
struct EvalOptions {
  WeightsLoadOptions load;  ///< strict by default; --non-strict lets weights of another kind or class count in
  bool amp = false;         ///< bf16 autocast (validate.py --amp); default f32, whatever train.amp says
};

/// Loads a weights file (safetensors or torch, engine/weights_load) into the configured model and evaluates the
/// test split on cfg.train.device.
EvalResult evaluate_weights(const io::Config& cfg, const std::string& weights_path, const EvalOptions& options = {});

}  // namespace vt::engine
