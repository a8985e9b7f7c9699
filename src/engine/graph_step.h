// A step (training or inference) replayed from a CUDA graph, timm's torch.compile(mode="reduce-overhead") analogue:
// the first `eager_steps` calls run the body eagerly, so lazy state is made then (optimizer moments, GEMM algorithm
// choices, workspaces: a first-use zero fill captured into a graph would re-run at every replay), the next call
// captures the body and runs it, and every later call replays it: one launch, no host work, no device allocation.
// prepare() runs on the host before every step, eager or replayed, and writes what changes per step to device memory
// (the optimizer's learning rate and step: Optimizer::prepare_step). The default generator's device draws read an
// offset shift written before each replay, so drop-path and dropout masks are fresh at every step and equal to an
// eager run's. Tensors the body assigns to the caller's variables (the loss) stay the graph's: each replay rewrites
// them, so copy what must outlive the next step. Off (or on the CPU) run() is prepare(); body().
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "core/device.h"
#include "tensor/tensor.h"

namespace vt::kernels::cuda {
class CudaGraph;
}

namespace vt::engine {

class GraphStep {
 public:
  GraphStep(Device device, bool use_graph, int64_t eager_steps, std::function<void()> prepare,
            std::function<void()> body);
  ~GraphStep();
  GraphStep(const GraphStep&) = delete;
  GraphStep& operator=(const GraphStep&) = delete;

  /// One step: prepare(), then the body eagerly, captured-and-run, or replayed.
  void run();
  /// True once the body was captured (later steps replay it).
  bool captured() const { return graph_ != nullptr; }
  /// Nodes of the captured graph (0 before the capture).
  size_t graph_nodes() const;

 private:
  void capture_and_run();
  void replay();

  Device device_;
  bool use_graph_;
  int64_t eager_steps_, calls_ = 0;
  std::function<void()> prepare_, body_;
  std::unique_ptr<kernels::cuda::CudaGraph> graph_;
  Tensor offset_shift_;  // u64 bits in an i64 device scalar, read by the captured draws
  uint64_t seed_ = 0, capture_offset_ = 0, offset_per_step_ = 0;
};

}  // namespace vt::engine
