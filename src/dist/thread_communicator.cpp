// ThreadCommunicator: each collective is post → barrier → compute from the peers' buffers → barrier → write
// own buffer (→ barrier), so no rank writes a buffer another rank may still be reading.
#include "dist/thread_communicator.h"

#include <algorithm>
#include <cstring>

namespace vt::dist {

namespace {

template <typename T>
void sum_in_rank_order(const std::vector<T*>& bufs, int64_t begin, int64_t end, std::vector<T>& out) {
  out.assign(static_cast<size_t>(end - begin), T(0));
  for (T* b : bufs)
    for (int64_t i = begin; i < end; ++i) out[static_cast<size_t>(i - begin)] += b[i];
}

}  // namespace

ThreadGroup::ThreadGroup(int world, std::chrono::milliseconds timeout)
    : world_(world), timeout_(timeout), posted_(static_cast<size_t>(world)) {
  VT_CHECK(world >= 1, "[thread_communicator] world must be >= 1, got ", world);
}

void ThreadGroup::barrier(int rank) {
  std::unique_lock<std::mutex> lock(mutex_);
  const int64_t gen = generation_;
  if (++arrived_ == world_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  const bool passed = cv_.wait_for(lock, timeout_, [&] { return generation_ != gen; });
  VT_CHECK(passed, "[thread_communicator] rank ", rank, " waited ", timeout_.count(),
           " ms at a barrier: another rank failed or called a different collective");
}

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {
  VT_CHECK(rank >= 0 && rank < group_->world(), "[thread_communicator] rank ", rank, " outside [0, ", group_->world(),
           ")");
}

void ThreadCommunicator::post(const Tensor& t, const char* op) {
  VT_CHECK(t.device().is_cpu() && t.is_contiguous(), "[thread_communicator] ", op, " on rank ", rank_,
           " needs a contiguous CPU tensor, got ", t.describe(), " on ", t.device().str());
  VT_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64, "[thread_communicator] ", op,
           " supports f32 and f64, got ", t.describe());
  group_->posted_[static_cast<size_t>(rank_)] = {t.raw_data(), t.numel(), t.dtype()};
  group_->barrier(rank_);
  const auto& first = group_->posted_.front();
  VT_CHECK(t.numel() == first.numel && t.dtype() == first.dtype, "[thread_communicator] ", op, ": rank ", rank_,
           " has ", t.describe(), ", rank 0 has ", first.numel, " elements of ", dtype_name(first.dtype));
}

void ThreadCommunicator::all_reduce_sum(const Tensor& t) {
  post(t, "all_reduce_sum");
  VT_DISPATCH_FLOAT(t.dtype(), "all_reduce_sum", [&] {
    std::vector<scalar_t*> bufs;
    for (const auto& p : group_->posted_) bufs.push_back(static_cast<scalar_t*>(p.data));
    std::vector<scalar_t> sum;
    sum_in_rank_order(bufs, 0, t.numel(), sum);
    group_->barrier(rank_);  // every rank has read the inputs
    std::copy(sum.begin(), sum.end(), t.data<scalar_t>());
  });
  group_->barrier(rank_);
}

void ThreadCommunicator::broadcast(const Tensor& t, int root) {
  VT_CHECK(root >= 0 && root < world(), "[thread_communicator] broadcast root ", root, " outside [0, ", world(), ")");
  post(t, "broadcast");
  if (rank_ != root)
    std::memcpy(t.raw_data(), group_->posted_[static_cast<size_t>(root)].data,
                static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  group_->barrier(rank_);
}

void ThreadCommunicator::reduce_scatter_sum(const Tensor& buffer) {
  VT_CHECK(buffer.dim() == 1, "[thread_communicator] reduce_scatter_sum needs a 1-D buffer, got ", buffer.describe());
  post(buffer, "reduce_scatter_sum");
  const auto [begin, end] = shard_range(buffer.numel(), world(), rank_);
  VT_DISPATCH_FLOAT(buffer.dtype(), "reduce_scatter_sum", [&] {
    std::vector<scalar_t*> bufs;
    for (const auto& p : group_->posted_) bufs.push_back(static_cast<scalar_t*>(p.data));
    std::vector<scalar_t> sum;
    sum_in_rank_order(bufs, begin, end, sum);
    group_->barrier(rank_);
    std::copy(sum.begin(), sum.end(), buffer.data<scalar_t>() + begin);
  });
  group_->barrier(rank_);
}

void ThreadCommunicator::all_gather(const Tensor& buffer) {
  VT_CHECK(buffer.dim() == 1, "[thread_communicator] all_gather needs a 1-D buffer, got ", buffer.describe());
  post(buffer, "all_gather");
  const size_t elem = dtype_size(buffer.dtype());
  auto* mine = static_cast<char*>(buffer.raw_data());
  // Slice r is read from rank r, which never writes it: no copy of the inputs is needed.
  for (int r = 0; r < world(); ++r) {
    if (r == rank_) continue;
    const auto [begin, end] = shard_range(buffer.numel(), world(), r);
    const auto* theirs = static_cast<const char*>(group_->posted_[static_cast<size_t>(r)].data);
    std::memcpy(mine + static_cast<size_t>(begin) * elem, theirs + static_cast<size_t>(begin) * elem,
                static_cast<size_t>(end - begin) * elem);
  }
  group_->barrier(rank_);
}

}  // namespace vt::dist
