// The update of every training loop (see the header).
#include "engine/train_step.h"

#include <utility>

#include "core/error.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::engine {

TrainStep::TrainStep(Device device, bool use_graph, StepParts parts, std::function<TaskBatch()> next_batch,
                     std::function<Tensor(const TaskBatch&)> loss)
    : parts_(parts),
      use_graph_(use_graph && device.is_cuda()),
      next_batch_(std::move(next_batch)),
      loss_fn_(std::move(loss)),
      step_(
          device, use_graph_, kEagerSteps, [this] { parts_.opt.prepare_step(); }, [this] { body(); }) {
  VT_CHECK(!use_graph_ || (parts_.accum == 1 && !parts_.dp),
           "[cuda_graph] a captured update takes one micro-batch on one process, got ", parts_.accum, " micro-batches",
           parts_.dp ? " under data parallelism" : "");
}

TrainStep::Result TrainStep::run() {
  items_ = 0;
  if (use_graph_) {  // the batch into the captured inputs (made by the first update)
    const TaskBatch b = next_batch_();
    if (!staged_.input.defined())
      staged_ = {Tensor::empty(b.input.shape(), b.input.dtype(), b.input.device()),
                 Tensor::empty(b.target.shape(), b.target.dtype(), b.target.device())};
    VT_CHECK(b.input.shape() == staged_.input.shape() && b.input.dtype() == staged_.input.dtype() &&
                 b.target.shape() == staged_.target.shape() && b.target.dtype() == staged_.target.dtype(),
             "[train] train.cuda_graph replays one batch shape: got input ", b.input.describe(), " and target ",
             b.target.describe(), " after ", staged_.input.describe(), " and ", staged_.target.describe());
    staged_.input.copy_(b.input);
    staged_.target.copy_(b.target);
    items_ = b.input.size(0);
  }
  step_.run();
  return {use_graph_ ? loss_.detach().clone() : loss_, items_};  // the next replay rewrites loss_
}

// The update, top to bottom. Under a graph this runs at the eager steps and the capture only; replays re-run its
// kernels.
void TrainStep::body() {
  StepParts& p = parts_;
  p.opt.zero_grad();
  Tensor total;
  for (int64_t j = 0; j < p.accum; ++j) {
    const TaskBatch b = use_graph_ ? staged_ : next_batch_();
    if (!use_graph_) items_ += b.input.size(0);
    Tensor loss;
    {
      nn::AutocastGuard autocast(p.amp);  // forward and loss only; backward follows the recorded dtypes
      loss = loss_fn_(b);
    }
    if (p.accum > 1) loss = ops::mul(loss, 1.0 / static_cast<double>(p.accum));
    if (p.dp) p.dp->begin_backward(j + 1 == p.accum);  // only the last micro-batch communicates (no_sync)
    loss.backward();                                   // gradients of the micro-batches add up in .grad
    total = total.defined() ? total + loss.detach() : loss.detach();
  }
  if (p.dp) p.dp->finish_backward(p.clip_grad > 0);  // averaged gradients (ZeRO-1: this rank's slice)
  if (p.clip_grad > 0) p.opt.clip_grad_norm(p.clip_grad);
  p.opt.apply_step();  // GraphStep ran prepare_step() before the body
  if (p.dp) p.dp->after_step();
  if (p.ema) p.ema->update(p.model);
  loss_ = total;
}

}  // namespace vt::engine
