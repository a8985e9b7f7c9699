// DataParallel: gradient-ready hooks → bucket all-reduce in a fixed order; ZeRO-1 reduce-scatter / all-gather.
#include "dist/data_parallel.h"

#include <unordered_map>

#include "autograd/grad_hooks.h"
#include "ops/elementwise.h"
#include "optim/adamw.h"
#include "optim/flat_buffers.h"

namespace vt::dist {

namespace {

std::vector<Tensor> optimizer_params(const optim::Optimizer& opt) {
  std::vector<Tensor> out;
  for (const auto& g : opt.groups) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

}  // namespace

DataParallel::DataParallel(optim::Optimizer& opt, Communicator& comm, const DataParallelOptions& options,
                           const std::vector<Tensor>& model_params)
    : opt_(opt), comm_(comm), options_(options) {
  VT_CHECK(opt.flat(), "[data_parallel] the optimizer must use flat buffers (Optimizer::use_flat_buffers())");
  VT_CHECK(options.bucket_mb > 0, "[data_parallel] bucket size must be > 0 MB, got ", options.bucket_mb);
  const std::vector<Tensor> params = optimizer_params(opt);
  const auto n = static_cast<int64_t>(params.size());
  if (options.zero1) {
    auto* adamw = dynamic_cast<optim::AdamW*>(&opt);
    VT_CHECK(adamw, "[data_parallel] dist.zero1 shards AdamW's state; it does not support this optimizer");
    const auto [begin, end] = shard_range(opt.flat()->size(), comm.world(), comm.rank());
    adamw->set_flat_range(begin, end);
    return;  // one reduce-scatter after backward: no hooks, no buckets
  }
  std::vector<int64_t> position;
  if (!model_params.empty()) {
    std::unordered_map<const TensorImpl*, int64_t> index;
    for (size_t i = 0; i < model_params.size(); ++i) index[&model_params[i].impl()] = static_cast<int64_t>(i);
    for (const Tensor& p : params) {
      auto it = index.find(&p.impl());
      VT_CHECK(it != index.end(), "[data_parallel] optimizer parameter ", p.describe(), " is not among the model's");
      position.push_back(it->second);
    }
  }
  const auto bucket_bytes = static_cast<int64_t>(options.bucket_mb * 1024.0 * 1024.0);
  buckets_ = make_grad_buckets(*opt.flat(), std::max<int64_t>(1, bucket_bytes), position);
  bucket_of_.assign(static_cast<size_t>(n), 0);
  for (size_t b = 0; b < buckets_.size(); ++b)
    for (int64_t k : buckets_[b].params) bucket_of_[static_cast<size_t>(k)] = b;
  ready_.assign(static_cast<size_t>(n), 0);
  missing_.resize(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) missing_[b] = static_cast<int64_t>(buckets_[b].params.size());
  for (int64_t k = 0; k < n; ++k) {
    set_post_accumulate_grad_hook(params[static_cast<size_t>(k)], [this, k] { on_grad_ready(k); });
    hooked_.push_back(params[static_cast<size_t>(k)]);
  }
}

DataParallel::~DataParallel() {
  for (const Tensor& p : hooked_) set_post_accumulate_grad_hook(p, {});
}

void DataParallel::broadcast_from_rank0(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) comm_.broadcast(t, 0);
  comm_.wait();
}

void DataParallel::begin_backward(bool sync) { sync_ = sync; }

void DataParallel::on_grad_ready(int64_t k) {
  if (!sync_) return;
  char& ready = ready_[static_cast<size_t>(k)];
  VT_CHECK(!ready, "[data_parallel] rank ", comm_.rank(), ": parameter ", k,
           " received two gradients in one backward (used twice in the forward): bucketed reduction needs one");
  ready = 1;
  if (--missing_[bucket_of_[static_cast<size_t>(k)]] == 0) launch_ready();
}

void DataParallel::launch_ready() {
  while (next_launch_ < buckets_.size() && missing_[next_launch_] == 0) launch(next_launch_++);
}

void DataParallel::launch(size_t b) {
  // A world of 1 still communicates (a no-op sum), so one GPU exercises the whole path.
  const Tensor view = opt_.flat()->grads().slice(0, buckets_[b].begin, buckets_[b].end);
  if (comm_.world() > 1) ops::mul_(view, 1.0 / comm_.world());  // before the sum: exact for power-of-two worlds
  comm_.all_reduce_sum(view);
  if (on_launch) on_launch(b);
}

void DataParallel::finish_backward(bool gather_grads) {
  if (options_.zero1) {
    const Tensor& grads = opt_.flat()->grads();
    if (comm_.world() > 1) ops::mul_(grads, 1.0 / comm_.world());
    comm_.reduce_scatter_sum(grads);
    if (gather_grads) comm_.all_gather(grads);
    comm_.wait();
    return;
  }
  while (next_launch_ < buckets_.size()) launch(next_launch_++);  // parameters backward did not reach count too
  comm_.wait();
  next_launch_ = 0;
  std::fill(ready_.begin(), ready_.end(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) missing_[b] = static_cast<int64_t>(buckets_[b].params.size());
  sync_ = true;
}

void DataParallel::after_step() {
  if (!options_.zero1) return;
  comm_.all_gather(opt_.flat()->params());
  comm_.wait();
}

void DataParallel::gather_state() {
  if (!options_.zero1 || opt_.step_count() == 0) return;
  for (const Tensor& buffer : static_cast<optim::AdamW&>(opt_).flat_state_buffers()) comm_.all_gather(buffer);
  comm_.wait();
}

void DataParallel::release_state() {
  if (options_.zero1) static_cast<optim::AdamW&>(opt_).release_full_state();
}

}  // namespace vt::dist
