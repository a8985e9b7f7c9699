// SGD update loop (CPU, OpenMP over elements); with flat buffers one loop per group on the CPU, one kernel
// launch on CUDA.
#include "optim/sgd.h"

#include "kernels/cuda/adamw.h"
#include "kernels/dispatch.h"
#include "optim/flat_buffers.h"
#include "optim/fused_ema.h"

namespace vt::optim {

namespace {

// buf is null without momentum; `first` marks a fresh momentum buffer, which starts as d itself.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, bool first, int64_t n, double lr, double wd, double momentum, bool nesterov,
                FusedEmaLoop<T> ema = {}) {
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(g[i]) + wd * static_cast<double>(p[i]);
    if (buf) {
      buf[i] = static_cast<T>(first ? d : momentum * static_cast<double>(buf[i]) + d);
      d = nesterov ? d + momentum * static_cast<double>(buf[i]) : static_cast<double>(buf[i]);
    }
    p[i] = static_cast<T>(p[i] - lr * d);
    if (ema.ema) ema.update(i, p[i]);
  }
}

}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, bool nesterov)
    : Optimizer(std::move(groups), lr), momentum_(momentum), nesterov_(nesterov) {
  VT_CHECK(momentum_ >= 0.0, "[sgd] momentum must be >= 0, got ", momentum_);
  VT_CHECK(!nesterov_ || momentum_ > 0.0, "[sgd] Nesterov momentum needs momentum > 0");
}

void SGD::prepare_update() {
  if (!flat_) return;  // per-tensor: each momentum buffer's first step is known in apply
  first_step_ = false;
  if (momentum_ > 0.0) {  // the buffer exists before apply_update(), which then allocates nothing
    first_step_ = !has_flat_slot("momentum_buffer");
    flat_slot("momentum_buffer");
  }
  if (flat_->device().is_cpu()) return;
  const kernels::cuda::SgdStepScalars values{static_cast<float>(step_lr_), first_step_ ? 1 : 0};
  kernels::on_cuda(flat_->device(), [&](kernels::Cuda c) {
    kernels::cuda::set_sgd_step_scalars(
        static_cast<kernels::cuda::SgdStepScalars*>(device_step_scalars(sizeof(values))), values, c.stream);
  });
}

void SGD::apply_update() {
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
      sgd_update(p.data<scalar_t>(), grad.data<scalar_t>(), buf ? buf->data<scalar_t>() : nullptr, first, p.numel(),
                 step_lr_, group.weight_decay, momentum_, nesterov_);
    });
  });
}

void SGD::flat_step() {
  PendingClip clip = take_pending_clip();
  Tensor* buf = momentum_ > 0.0 ? &flat_slot("momentum_buffer") : nullptr;  // made by prepare_update()
  const Tensor& p = flat_->params();
  const Tensor& g = flat_->grads();
  if (flat_->size() == 0) return;
  if (flat_->device().is_cpu()) {
    int64_t begin = 0;
    for (const auto& [end, weight_decay] : flat_->group_ends()) {
      VT_DISPATCH_FLOAT(p.dtype(), "sgd", [&] {
        sgd_update(p.data<scalar_t>() + begin, g.data<scalar_t>() + begin,
                   buf ? buf->data<scalar_t>() + begin : nullptr, first_step_, end - begin, step_lr_, weight_decay,
                   momentum_, nesterov_, make_fused_ema_loop<scalar_t>(ema_.buffer, ema_.decay, begin));
      });
      begin = end;
    }
    return;
  }
  // Everything here is the same at every step (graph capture): lr and the first-step flag come from the device.
  const kernels::cuda::FlatGroups flat_groups = kernels::cuda::make_flat_groups(flat_->group_ends());
  kernels::cuda::DeviceClip device_clip;
  if (clip.partials.defined())
    device_clip = {clip.partials.data<double>(), clip.norm.data<float>(), static_cast<float>(clip.max_norm)};
  kernels::cuda::FusedEma device_ema;
  if (ema_.buffer.defined())
    device_ema = {ema_.buffer.data<float>(), static_cast<float>(ema_.decay), static_cast<float>(1.0 - ema_.decay)};
  const auto* scalars =
      static_cast<const kernels::cuda::SgdStepScalars*>(device_step_scalars(sizeof(kernels::cuda::SgdStepScalars)));
  kernels::on_cuda(flat_->device(), [&](kernels::Cuda c) {
    kernels::cuda::sgd_flat_step(p.data<float>(), g.data<float>(), buf ? buf->data<float>() : nullptr, flat_->size(),
                                 flat_groups, static_cast<float>(momentum_), nesterov_, scalars, device_clip,
                                 device_ema, c.stream);
  });
}

}  // namespace vt::optim
