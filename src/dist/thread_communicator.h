// In-process communicator: N ranks are N threads sharing one ThreadGroup; tensors live on the CPU (f32/f64).
// Every collective is synchronous and sums in rank order 0, 1, ..., N-1 on every rank, so all ranks get the same
// bits and a run is bitwise reproducible. It exists for tests of the data-parallel logic without GPUs.
#pragma once
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "dist/communicator.h"

namespace vt::dist {

/// The state the threads of one in-process job share: a reusable barrier and each rank's posted buffer.
class ThreadGroup {
 public:
  /// A group of `world` ranks; a rank waiting longer than `timeout` at a barrier throws (a peer died).
  explicit ThreadGroup(int world, std::chrono::milliseconds timeout = std::chrono::seconds(120));
  int world() const { return world_; }

 private:
  friend class ThreadCommunicator;
  struct Posted {
    void* data = nullptr;
    int64_t numel = 0;
    DType dtype = DType::f32;
  };
  void barrier(int rank);

  int world_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int64_t generation_ = 0;
  std::vector<Posted> posted_;
};

class ThreadCommunicator : public Communicator {
 public:
  /// Rank `rank` of `group` (one communicator per thread).
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank);
  int rank() const override { return rank_; }
  int world() const override { return group_->world(); }
  void all_reduce_sum(const Tensor& t) override;
  void broadcast(const Tensor& t, int root = 0) override;
  void reduce_scatter_sum(const Tensor& buffer) override;
  void all_gather(const Tensor& buffer) override;
  void barrier() override { group_->barrier(rank_); }

 private:
  /// Posts t, waits for every rank, and checks that all posted the same numel and dtype.
  void post(const Tensor& t, const char* op);

  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

}  // namespace vt::dist
