// The collectives data-parallel training needs, behind one interface: NcclCommunicator (one process per GPU) and
// ThreadCommunicator (ranks as threads of one process, CPU tensors; the test double). Every rank must call the
// same collectives in the same order with tensors of the same shape and dtype.
//
// Tensors are contiguous and are reduced in place. A "flat range" is a slice of a 1-D buffer (Tensor::slice), so
// a gradient bucket is all-reduced without a copy. Collectives may complete asynchronously (NCCL queues them on
// its own stream after the work already queued on the compute stream): call wait() before the compute stream or
// the host reads the results.
#pragma once
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace vt::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's (or thread's) rank in [0, world).
  virtual int rank() const = 0;
  /// Number of ranks.
  virtual int world() const = 0;

  /// t = sum over ranks of t, in place.
  virtual void all_reduce_sum(const Tensor& t) = 0;
  /// t = rank `root`'s t, in place.
  virtual void broadcast(const Tensor& t, int root = 0) = 0;
  /// In place on a 1-D buffer split by shard_range(): afterwards this rank's slice holds the sum over ranks of that
  /// slice (the other slices are left unspecified).
  virtual void reduce_scatter_sum(const Tensor& buffer) = 0;
  /// In place on a 1-D buffer split by shard_range(): each rank contributes its slice and afterwards every rank
  /// holds all slices.
  virtual void all_gather(const Tensor& buffer) = 0;
  /// Returns when every rank has called it (the host waits).
  virtual void barrier() = 0;
  /// Makes later work on the compute stream (and the host, for host tensors) see the results of every collective
  /// issued so far. Synchronous communicators have nothing to do.
  virtual void wait() {}
};

/// `values` summed over the ranks (evaluation totals, a logged loss): one small f64 all-reduce through a tensor on
/// `device`; the host waits for it.
std::vector<double> sum_over_ranks(Communicator& comm, const std::vector<double>& values, Device device);

/// Rank `rank`'s slice [begin, end) of a 1-D buffer of `numel` elements split over `world` ranks: slices of
/// ceil(numel / world) elements rounded up to a multiple of 4 (16-byte aligned f32 for the fused optimizer
/// kernels), so the last slices may be shorter or empty.
std::pair<int64_t, int64_t> shard_range(int64_t numel, int world, int rank);

}  // namespace vt::dist
