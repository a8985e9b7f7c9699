// Helpers shared by the communicators.
#include "dist/communicator.h"

#include <algorithm>

namespace vt::dist {

std::pair<int64_t, int64_t> shard_range(int64_t numel, int world, int rank) {
  VT_CHECK(world > 0 && rank >= 0 && rank < world, "[dist] rank ", rank, " outside [0, ", world, ")");
  const int64_t per = ((numel + world - 1) / world + 3) / 4 * 4;
  const int64_t begin = std::min(numel, per * rank);
  return {begin, std::min(numel, begin + per)};
}

std::vector<double> sum_over_ranks(Communicator& comm, const std::vector<double>& values, Device device) {
  Tensor t = Tensor::from_vector(values, {static_cast<int64_t>(values.size())}, DType::f64).to(device);
  comm.all_reduce_sum(t);
  comm.wait();
  return t.to(cpu()).to_vector();
}

}  // namespace vt::dist
