// A CUDA graph of device work: captured once on its own stream, then replayed with one launch and no host work.
// The captured work's memory comes from the caching allocator's pool of that stream, which nothing else draws from,
// so replays write into the same blocks without racing other tensors; blocks of other streams that the work freed
// are held until the graph is destroyed (caching_allocator.h). Whatever changes from one replay to the next must be
// read by the kernels from device memory written before replay() (kernel arguments are frozen at capture).
#pragma once
#include "kernels/device_handles.h"

#include <functional>
#include <vector>

namespace vt::kernels::cuda {

class CudaGraph {
 public:
  explicit CudaGraph(int device);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  /// Records the device work body() queues on current_stream() (nothing runs yet). Waits for the device first.
  /// Work that cannot be replayed (a host copy or synchronization, a host-chosen random offset) throws naming it.
  void capture(const std::function<void()>& body);
  /// Runs the captured work once, after the work queued on the default stream so far and before what follows there.
  void replay();
  bool captured() const { return exec_ != nullptr; }
  /// Kernel and copy nodes of the captured graph.
  size_t num_nodes() const { return num_nodes_; }

 private:
  void release_capture_state();

  int device_;
  KernelStream stream_ = nullptr;
  DeviceEvent queued_ = nullptr, finished_ = nullptr;
  DeviceGraph graph_ = nullptr;
  DeviceGraphExec exec_ = nullptr;
  std::vector<void*> held_blocks_;  // other streams' blocks freed during the capture
  size_t num_nodes_ = 0;
};

}  // namespace vt::kernels::cuda
