// The one training loop and the task interface it runs. A task (classification: engine/trainer, segmentation:
// engine/seg_trainer) says what is trained: the model, the next batch, the loss, an evaluation as a metrics row,
// and which result is better. The loop owns the rest, the same for every task: the run's set-up (start_run),
// resume, the update (engine/train_step: accumulation, clipping, EMA, always through GraphStep, graph on or off),
// progress lines and rows, evaluation every eval.interval epochs, the best, last, checkpoint-<epoch> and recovery
// checkpoints, train.max_steps and the stop signals (engine/run_stop), the summary and the final weights.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/process_group.h"
#include "engine/recipe.h"
#include "engine/run_support.h"
#include "engine/train_step.h"
#include "engine/trainer.h"
#include "io/config.h"

namespace vt::engine {

/// One evaluation of a task's model (and its EMA model).
struct TaskEvaluation {
  double value = 0;  ///< eval.best_metric's value
  std::string line;  ///< the scores for the epoch's log line ("test top-1 ...")
  /// The metrics row's scores: `scores` after epoch, step and lr; `ema_scores` after elapsed_s.
  std::vector<std::pair<std::string, double>> scores, ema_scores;
};

class TrainTask {
 public:
  virtual ~TrainTask() = default;
  /// The model to train, built on the host: the loop loads a resumed checkpoint into it and moves it.
  virtual nn::Module& model() = 0;
  /// A model of the same architecture for train.model_ema's average (host), or null without the EMA.
  virtual nn::Module* ema_model() = 0;
  /// A fresh run's starting weights (model.initial_checkpoint) into model(); a resumed run skips it.
  virtual void load_initial_weights() = 0;
  /// Micro-batches of train.batch_size (on this rank) in one epoch.
  virtual int64_t batches_per_epoch() const = 0;
  /// The training data at micro-batch `first` of `epoch` (a resumed run starts mid-epoch).
  virtual void begin_epoch(int64_t epoch, int64_t first) = 0;
  /// The epoch's updates are done; its evaluation and checkpoints follow (a loader may start the next epoch).
  virtual void end_epoch(int64_t /*epoch*/) {}
  /// The next micro-batch of the epoch, on the run's device.
  virtual TaskBatch next_batch() = 0;
  /// The scalar training loss of `batch` through model() (run under autocast, then differentiated).
  virtual Tensor loss(const TaskBatch& batch) = 0;
  /// Evaluates model() (in eval mode) and the EMA model when there is one; every rank gets the same scores.
  virtual TaskEvaluation evaluate() = 0;
  /// Whether eval.best_metric's `value` beats `best`.
  virtual bool better(double value, double best) const = 0;
  /// The best value for the log line ("best top1 75.1234", "best mIoU 40.12").
  virtual std::string best_text(double best) const = 0;
  /// Unreadable files skipped so far; nullopt when the data cannot have any (in memory).
  virtual std::optional<int64_t> bad_files() const { return std::nullopt; }
};

/// Trains the task that `make_task` builds once the run has started (its device, ranks and logger known) on
/// cfg.train.device (bf16 autocast on CUDA with train.amp) and returns the run's summary; a resumed run that already
/// finished builds no task. Inside an update the host waits for the device only when a progress line reads the
/// loss; a non-finite loss stops the run with an error before any checkpoint holds it. In a launched job
/// (dist::launch_env().distributed()) or with hooks.communicator, each rank trains with data parallelism
/// (dist/data_parallel.h, dist.* keys: train.batch_size per rank, gradients averaged, each rank its share of the
/// data, evaluation totals summed over the ranks); rank 0 alone writes the log, metrics, checkpoints and weights.
RunSummary train_loop(const io::Config& cfg, const TrainHooks& hooks,
                      const std::function<TrainTask&(const RunStart&)>& make_task);

/// train_loop over a `Task` built as Task(cfg, run, summary), which writes its scores into the returned summary;
/// `given`'s global batch is first divided over the job's processes (resolve_for_world).
template <typename Task, typename Summary>
Summary train_task(const io::Config& given, const TrainHooks& hooks) {
  const io::Config cfg = resolve_for_world(given, process_world(hooks.communicator));  // the per-GPU batch
  std::optional<Task> task;
  Summary summary;
  static_cast<RunSummary&>(summary) =
      train_loop(cfg, hooks, [&](const RunStart& run) -> TrainTask& { return task.emplace(cfg, run, summary); });
  return summary;
}

}  // namespace vt::engine
