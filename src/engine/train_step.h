// One optimizer update, the same for every training task and for `vitrain bench`: zero the gradients; per
// micro-batch the forward and loss under autocast, scaled by 1/accumulation, and its backward (data parallel: only
// the last micro-batch communicates); then the data-parallel finish, the clip, the optimizer and the EMA. It always
// runs through a GraphStep: with the CUDA graph on, two eager updates, then the update captured and replayed, each
// batch copied into the captured inputs first; off, the same body runs eagerly, reading its micro-batches as it goes.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>

#include "dist/data_parallel.h"
#include "engine/ema.h"
#include "engine/graph_step.h"
#include "optim/optimizer.h"

namespace vt::engine {

/// A micro-batch on the run's device: the model's input and the loss's target.
struct TaskBatch {
  Tensor input, target;
};

/// What one update changes and how (not owned; dp and ema may be null).
struct StepParts {
  nn::Module& model;
  optim::Optimizer& opt;
  dist::DataParallel* dp = nullptr;
  ModelEma* ema = nullptr;
  std::optional<DType> amp;  ///< autocast dtype of the forward and loss
  double clip_grad = 0;      ///< > 0: clip the global gradient norm to this
  int64_t accum = 1;         ///< micro-batches per update
};

class TrainStep {
 public:
  static constexpr int64_t kEagerSteps = 2;  ///< eager updates before the capture (lazy state, GEMM autotuning)

  /// `next_batch` hands the next micro-batch; `loss` is its scalar loss. A graph (`use_graph` on a CUDA device)
  /// takes one micro-batch on one process (an error otherwise).
  TrainStep(Device device, bool use_graph, StepParts parts, std::function<TaskBatch()> next_batch,
            std::function<Tensor(const TaskBatch&)> loss);

  struct Result {
    Tensor loss;        ///< the mean over the micro-batches, a device scalar of its own
    int64_t items = 0;  ///< rows of the update's micro-batches on this rank
  };
  Result run();
  size_t graph_nodes() const { return step_.graph_nodes(); }  ///< 0 while eager

 private:
  void body();

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
