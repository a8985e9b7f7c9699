// One optimizer update, the same for every training task and for `vitrain bench`: zero the gradients; for each of
// the update's micro-batches the forward and loss under autocast, scaled by 1/accumulation, and its backward (data
// parallel: only the last micro-batch communicates); the data-parallel finish, the clip, the optimizer, the EMA.
// It always runs through a GraphStep: with the CUDA graph on, two eager updates, then the update captured and
// replayed, each batch copied into the captured inputs first (one micro-batch, one process); off, the same body
// runs eagerly, reading its micro-batches as it goes.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>

#include "core/device.h"
#include "core/dtype.h"
#include "engine/graph_step.h"
#include "tensor/tensor.h"

namespace vt::nn {
class Module;
}
namespace vt::optim {
class Optimizer;
}
namespace vt::dist {
class DataParallel;
}

namespace vt::engine {

class ModelEma;

/// A micro-batch on the run's device: the model's input and the loss's target.
struct TaskBatch {
  Tensor input, target;
};

/// What one update changes and how (not owned).
struct StepParts {
  nn::Module& model;
  optim::Optimizer& opt;
  dist::DataParallel* dp = nullptr;  ///< data parallel, or null
  ModelEma* ema = nullptr;           ///< train.model_ema, or null
  std::optional<DType> amp;          ///< autocast dtype of the forward and loss
  double clip_grad = 0;              ///< > 0: clip the global gradient norm to this
  int64_t accum = 1;                 ///< micro-batches per update
};

class TrainStep {
 public:
  /// `next_batch` hands the next micro-batch (on the device); `loss` is its scalar loss (run under autocast).
  /// With `use_graph` on a CUDA device the update is captured after kEagerSteps eager ones; it needs accum == 1
  /// and no data parallelism (an error otherwise).
  TrainStep(Device device, bool use_graph, StepParts parts, std::function<TaskBatch()> next_batch,
            std::function<Tensor(const TaskBatch&)> loss);

  struct Result {
    Tensor loss;        ///< the update's loss (the mean over its micro-batches), a device scalar of its own
    int64_t items = 0;  ///< rows of the update's micro-batches on this rank
  };
  /// One update.
  Result run();
  /// Nodes of the captured graph (0 while eager).
  size_t graph_nodes() const { return step_.graph_nodes(); }

  static constexpr int64_t kEagerSteps = 2;  ///< eager updates before the capture (lazy state, GEMM autotuning)

 private:
  void body();
  TaskBatch micro_batch();
  void stage(const TaskBatch& b);

  StepParts parts_;
  bool use_graph_;
  std::function<TaskBatch()> next_batch_;
  std::function<Tensor(const TaskBatch&)> loss_fn_;
  TaskBatch staged_;  // the captured inputs (graph only)
  Tensor loss_;       // written by the body; a replay rewrites it
  int64_t items_ = 0;
  GraphStep step_;
};

}  // namespace vt::engine
