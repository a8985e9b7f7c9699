// SGD update loop (CPU, OpenMP over elements); with flat buffers one loop per group on the CPU, one kernel
// launch on CUDA.
#include "optim/sgd.h"

#include "optim/flat_buffers.h"
#ifdef VT_WITH_CUDA
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/stream.h"
#endif

namespace vt::optim {

namespace {

// buf is null without momentum; `first` marks a fresh momentum buffer, which starts as d itself.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, bool first, int64_t n, double lr, double wd, double momentum,
                bool nesterov) {
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(g[i]) + wd * static_cast<double>(p[i]);
    if (buf) {
      buf[i] = static_cast<T>(first ? d : momentum * static_cast<double>(buf[i]) + d);
      d = nesterov ? d + momentum * static_cast<double>(buf[i]) : static_cast<double>(buf[i]);
    }
    p[i] = static_cast<T>(p[i] - lr * d);
  }
}

}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, bool nesterov)
    : Optimizer(std::move(groups), lr), momentum_(momentum), nesterov_(nesterov) {
  VT_CHECK(momentum_ >= 0.0, "[sgd] momentum must be >= 0, got ", momentum_);
  VT_CHECK(!nesterov_ || momentum_ > 0.0, "[sgd] Nesterov momentum needs momentum > 0");
}

void SGD::step() {
  ++step_count_;
  if (flat_) {
    flat_step();
    return;
  }
  for_each_param([&](int64_t k, const ParamGroup& group, Tensor& p) {
    Tensor grad = p.grad();
    if (!grad.defined()) return;
    check_param("sgd", k, p, grad);
    ++param_steps_[static_cast<size_t>(k)];
    Tensor* buf = nullptr;
    bool first = false;
    if (momentum_ > 0.0) {
      first = find_slot(k, "momentum_buffer") == nullptr;
      buf = &slot(k, "momentum_buffer", p);
    }
    VT_DISPATCH_FLOAT(p.dtype(), "sgd", [&] {
      sgd_update(p.data<scalar_t>(), grad.data<scalar_t>(), buf ? buf->data<scalar_t>() : nullptr, first,
                 p.numel(), lr, group.weight_decay, momentum_, nesterov_);
    });
  });
}

void SGD::flat_step() {
  begin_flat_step();
  PendingClip clip = take_pending_clip();
  Tensor* buf = nullptr;
  bool first = false;
  if (momentum_ > 0.0) {
    first = !has_flat_slot("momentum_buffer");
    buf = &flat_slot("momentum_buffer");
  }
  const Tensor& p = flat_->params();
  const Tensor& g = flat_->grads();
  if (flat_->size() == 0) return;
  if (flat_->device().is_cpu()) {
    int64_t begin = 0;
    for (const auto& [end, weight_decay] : flat_->group_ends()) {
      VT_DISPATCH_FLOAT(p.dtype(), "sgd", [&] {
        sgd_update(p.data<scalar_t>() + begin, g.data<scalar_t>() + begin,
                   buf ? buf->data<scalar_t>() + begin : nullptr, first, end - begin, lr, weight_decay, momentum_,
                   nesterov_);
      });
      begin = end;
    }
    return;
  }
#ifdef VT_WITH_CUDA
  const kernels::cuda::FlatGroups flat_groups = kernels::cuda::make_flat_groups(flat_->group_ends());
  kernels::cuda::DeviceClip device_clip;
  if (clip.norm.defined()) device_clip = {clip.norm.data<float>(), static_cast<float>(clip.max_norm)};
  kernels::cuda::DeviceGuard guard(flat_->device().index);
  kernels::cuda::sgd_flat_step(p.data<float>(), g.data<float>(), buf ? buf->data<float>() : nullptr, flat_->size(),
                               flat_groups, static_cast<float>(lr), static_cast<float>(momentum_), nesterov_, first,
                               device_clip, kernels::cuda::current_stream());
#else
  fail_without_cuda("sgd", flat_->device());
#endif
}

}  // namespace vt::optim
