#include "engine/graph_step.h"

#include <utility>

#include "core/error.h"
#include "core/rng.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/graph.h"

namespace vt::engine {

GraphStep::GraphStep(Device device, bool use_graph, int64_t eager_steps, std::function<void()> prepare,
                     std::function<void()> body)
    : device_(device),
      use_graph_(use_graph && device.is_cuda()),
      eager_steps_(eager_steps),
      prepare_(std::move(prepare)),
      body_(std::move(body)) {
  VT_CHECK(eager_steps >= 1 || !use_graph_, "[cuda_graph] needs at least one eager step before the capture, got ",
           eager_steps);
}

GraphStep::~GraphStep() = default;

size_t GraphStep::graph_nodes() const {
#ifdef VT_WITH_CUDA
  return graph_ ? graph_->num_nodes() : 0;
#else
  return 0;
#endif
}

void GraphStep::run() {
  if (prepare_) prepare_();
  if (!use_graph_ || calls_ < eager_steps_) {
    body_();
  } else if (!graph_) {
    capture_and_run();
  } else {
    replay();
  }
  ++calls_;
}

void GraphStep::capture_and_run() {
#ifdef VT_WITH_CUDA
  Generator& gen = default_generator();
  offset_shift_ = Tensor::zeros({}, DType::i64, device_);
  // The graph's blocks come from a pool of their own: give the eager steps' cached blocks back first, or the step's
  // activations would be reserved twice.
  kernels::cuda::empty_cache(device_.index);
  seed_ = gen.seed();
  capture_offset_ = gen.offset();
  auto graph = std::make_unique<kernels::cuda::CudaGraph>(device_.index);
  gen.set_device_shift(static_cast<const uint64_t*>(offset_shift_.raw_data()));
  try {
    graph->capture(body_);
  } catch (...) {
    gen.set_device_shift(nullptr);
    gen.set_state(seed_, capture_offset_);
    throw;
  }
  gen.set_device_shift(nullptr);
  offset_per_step_ = gen.offset() - capture_offset_;
  graph_ = std::move(graph);
  graph_->replay();  // the capture ran nothing: this is the step (shift 0: the offsets it reserved)
#else
  VT_FAIL("[cuda_graph] this build has no CUDA backend");
#endif
}

void GraphStep::replay() {
#ifdef VT_WITH_CUDA
  Generator& gen = default_generator();
  VT_CHECK(gen.seed() == seed_, "[cuda_graph] the default generator was reseeded (", seed_, " -> ", gen.seed(),
           ") after the step was captured");
  const uint64_t start = gen.offset();
  offset_shift_.fill_(static_cast<double>(start - capture_offset_));  // exact below 2^53 counters
  gen.set_state(seed_, start + offset_per_step_);
  graph_->replay();
#endif
}

}  // namespace vt::engine
