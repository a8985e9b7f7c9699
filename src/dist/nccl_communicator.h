// NCCL communicator: one per process (one process per GPU). Rank 0 creates the NCCL unique id and shares it through
// dist::share_from_rank0 (the rendezvous on MASTER_ADDR:MASTER_PORT); the rendezvous carries nothing else.
//
// Collectives run on the communicator's own stream: each first makes that stream wait for the work queued so far
// on the compute stream (kernels::cuda::current_stream(), recorded as an event), so a gradient bucket is reduced as
// soon as backward has written it while backward goes on. wait() makes the compute stream wait for the
// communication stream. Tensors: contiguous, on this communicator's device, f32, bf16 or f64. Errors name the
// NCCL call, the rank and NCCL's message. Built only with VT_WITH_NCCL; elsewhere the constructor throws.
#pragma once
#include <memory>

#include "dist/communicator.h"
#include "dist/launch_env.h"

namespace vt::dist {

class NcclCommunicator : public Communicator {
 public:
  /// Joins the job described by `env` on `device` (a CUDA device); blocks until every rank has joined.
  NcclCommunicator(const LaunchEnv& env, Device device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  void all_reduce_sum(const Tensor& t) override;
  void broadcast(const Tensor& t, int root = 0) override;
  void reduce_scatter_sum(const Tensor& buffer) override;
  void all_gather(const Tensor& buffer) override;
  void barrier() override;
  void wait() override;

  /// True when this build has NCCL.
  static bool available();

 private:
  struct State;
  std::unique_ptr<State> state_;
  int rank_ = 0, world_ = 1;
};

}  // namespace vt::dist
