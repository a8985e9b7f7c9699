// Data-parallel training of one model replica per rank over the optimizer's flat buffers (torch DDP, and
// ZeRO-1 when asked).
//
// DDP: a hook on every parameter (autograd/grad_hooks.h) marks its gradient ready; when every parameter of a
// bucket (grad_buckets.h) is ready the bucket is scaled by 1/world (exact for power-of-two worlds) and
// all-reduced in place, on the communicator's stream, while backward goes on. Buckets launch in one fixed order
// on every rank (a bucket completed early waits for the buckets before it), as collectives must match.
// finish_backward() launches what backward never completed (a parameter backward did not reach still counts, its
// gradient being zero) and waits, leaving the averaged gradient in every rank's flat buffer.
// Gradient accumulation: begin_backward(false) for all but the last micro-batch communicates nothing (no_sync).
//
// ZeRO-1 (zero1): the optimizer (AdamW) updates only this rank's slice of the flat buffers (shard_range), so the
// update's arithmetic is shared out; finish_backward() reduce-scatters the whole scaled gradient and after_step()
// all-gathers the parameters. Each rank holds the AdamW state of its slice only (1/world of it); gather_state()
// assembles the whole state for a checkpoint (which then resumes at any world size) and release_state() frees it. With
// clipping the full gradient is needed for the global norm: finish_backward(true) all-gathers it too.
#pragma once
#include <functional>
#include <vector>

#include "dist/communicator.h"
#include "dist/grad_buckets.h"
#include "optim/optimizer.h"

namespace vt::dist {

struct DataParallelOptions {
  double bucket_mb = 25.0;  ///< bucket size in MiB (DDP's bucket_cap_mb)
  bool zero1 = false;       ///< shard the optimizer update (needs AdamW)
};

class DataParallel {
 public:
  /// Works on `opt`'s flat buffers (call opt.use_flat_buffers() first on the CPU) and installs the gradient hooks.
  /// `model_params`: the model's parameters in definition order (bucket launch order; empty: the optimizer's).
  DataParallel(optim::Optimizer& opt, Communicator& comm, const DataParallelOptions& options,
               const std::vector<Tensor>& model_params = {});
  /// Removes the hooks.
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  /// Overwrites `tensors` (e.g. parameters, buffers, EMA weights) with rank 0's values and waits.
  void broadcast_from_rank0(const std::vector<Tensor>& tensors);
  /// Before each micro-batch's backward: `sync` false for every micro-batch of an update but the last (no_sync).
  void begin_backward(bool sync);
  /// After the last backward of an update: completes the reduction (see the file comment); `gather_grads`
  /// (ZeRO-1 only) also all-gathers the reduced gradient, for clipping.
  void finish_backward(bool gather_grads = false);
  /// After the optimizer step: ZeRO-1 all-gathers the updated parameters; DDP has nothing to do.
  void after_step();
  /// ZeRO-1: makes the optimizer state complete on every rank (before writing a checkpoint); DDP: nothing to do.
  void gather_state();
  /// ZeRO-1: frees the whole state gather_state() assembled, keeping this rank's slice; DDP: nothing to do.
  void release_state();

  const std::vector<GradBucket>& buckets() const { return buckets_; }
  bool zero1() const { return options_.zero1; }
  /// Test observer: called with the bucket's index when its all-reduce is issued.
  std::function<void(size_t bucket)> on_launch;

 private:
  void on_grad_ready(int64_t k);
  void launch(size_t bucket);
  void launch_ready();

  optim::Optimizer& opt_;
  Communicator& comm_;
  DataParallelOptions options_;
  std::vector<Tensor> hooked_;       // parameters carrying our hook
  std::vector<GradBucket> buckets_;  // launch order
  std::vector<size_t> bucket_of_;    // parameter k -> bucket
  std::vector<int64_t> missing_;     // per bucket: parameters not ready yet in this backward
  std::vector<char> ready_;          // per parameter: gradient ready in this backward
  size_t next_launch_ = 0;
  bool sync_ = true;
};

}  // namespace vt::dist
