// AdamW update loop (CPU, OpenMP over elements). Arithmetic is in double on the stored f32 values, which stays
// within rounding of torch's float ops. With flat buffers: one loop per group on the CPU, one fused kernel
// launch for everything on CUDA (kernels/cuda/adamw.h).
#include "optim/adamw.h"

#include <algorithm>
#include <cmath>

#include "kernels/cuda/adamw.h"
#include "kernels/dispatch.h"
#include "optim/flat_buffers.h"
#include "optim/fused_ema.h"

namespace vt::optim {

namespace {

struct AdamWStep {
  double lr, weight_decay, beta1, beta2, eps, bias_correction1, bias_correction2_sqrt;
};

template <typename T>
void adamw_update(T* p, const T* g, T* m, T* v, int64_t n, const AdamWStep& s, FusedEmaLoop<T> ema = {}) {
  const double decay = 1.0 - s.lr * s.weight_decay;
  const double step_size = s.lr / s.bias_correction1;
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double gi = g[i];
    m[i] = static_cast<T>(s.beta1 * m[i] + (1.0 - s.beta1) * gi);
    v[i] = static_cast<T>(s.beta2 * v[i] + (1.0 - s.beta2) * gi * gi);
    const double denom = std::sqrt(static_cast<double>(v[i])) / s.bias_correction2_sqrt + s.eps;
    p[i] = static_cast<T>(p[i] * decay - step_size * static_cast<double>(m[i]) / denom);
    if (ema.ema) ema.update(i, p[i]);
  }
}

}  // namespace

AdamW::AdamW(std::vector<ParamGroup> groups, double lr, double beta1, double beta2, double eps)
    : Optimizer(std::move(groups), lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
  VT_CHECK(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0, "[adamw] betas must be in [0, 1), got (", beta1,
           ", ", beta2, ")");
  VT_CHECK(eps >= 0.0, "[adamw] eps must be >= 0, got ", eps);
}

void AdamW::prepare_update() {
  if (!flat_) return;  // per-tensor: each parameter's bias corrections come with its own step count in apply
  const double t = static_cast<double>(flat_step_count());
  // The state for this step exists before apply_update(), which then allocates nothing.
  if (range_end_ >= 0) {
    ensure_range_state();
    drop_whole_state();  // a gathered copy would go stale with this step
  } else {
    flat_slot("exp_avg");
    flat_slot("exp_avg_sq");
  }
  prepared_scalars_ = {step_lr_, 1.0 - std::pow(beta1_, t), std::sqrt(1.0 - std::pow(beta2_, t))};
  if (flat_->device().is_cpu()) return;
  const kernels::cuda::AdamWStepScalars values{static_cast<float>(prepared_scalars_.lr),
                                               static_cast<float>(prepared_scalars_.bias_correction1),
                                               static_cast<float>(prepared_scalars_.bias_correction2_sqrt)};
  kernels::on_cuda(flat_->device(), [&](kernels::Cuda c) {
    kernels::cuda::set_adamw_step_scalars(
        static_cast<kernels::cuda::AdamWStepScalars*>(device_step_scalars(sizeof(values))), values, c.stream);
  });
}

void AdamW::apply_update() {
  if (flat_) {
    flat_step();
    return;
  }
  for_each_param([&](int64_t k, const ParamGroup& group, Tensor& p) {
    Tensor grad = p.grad();
    if (!grad.defined()) return;
    check_param("adamw", k, p, grad);
    Tensor& m = slot(k, "exp_avg", p);
    Tensor& v = slot(k, "exp_avg_sq", p);
    const double t = static_cast<double>(++param_steps_[static_cast<size_t>(k)]);
    AdamWStep s{step_lr_,
                group.weight_decay,
                beta1_,
                beta2_,
                eps_,
                1.0 - std::pow(beta1_, t),
                std::sqrt(1.0 - std::pow(beta2_, t))};
    VT_DISPATCH_FLOAT(p.dtype(), "adamw", [&] {
      adamw_update(p.data<scalar_t>(), grad.data<scalar_t>(), m.data<scalar_t>(), v.data<scalar_t>(), p.numel(), s);
    });
  });
}

void AdamW::set_flat_range(int64_t begin, int64_t end) {
  VT_CHECK(flat_, "[adamw] set_flat_range needs flat buffers (use_flat_buffers())");
  VT_CHECK(!ema_.buffer.defined(), "[adamw] set_flat_range: a fused EMA (set_ema) needs the whole flat buffers");
  VT_CHECK(
      0 <= begin && begin <= end && end <= flat_->size() && begin % 4 == 0 && (end % 4 == 0 || end == flat_->size()),
      "[adamw] flat range [", begin, ", ", end, ") is not a 4-aligned range of the ", flat_->size(),
      "-element flat buffers");
  range_begin_ = begin;
  range_end_ = end;
}

std::vector<Tensor> AdamW::flat_state_buffers() {
  VT_CHECK(flat_, "[adamw] flat_state_buffers needs flat buffers (use_flat_buffers())");
  if (range_end_ < 0) return {flat_slot("exp_avg"), flat_slot("exp_avg_sq")};
  ensure_range_state();
  Tensor m = flat_slot("exp_avg"), v = flat_slot("exp_avg_sq");  // whole size, zero-filled
  m.slice(0, range_begin_, range_end_).copy_(range_m_);
  v.slice(0, range_begin_, range_end_).copy_(range_v_);
  whole_from_range_ = &m.impl();
  return {m, v};
}

void AdamW::release_full_state() {
  if (range_end_ < 0) return;
  ensure_range_state();
  drop_whole_state();
}

int64_t AdamW::resident_state_numel() const {
  int64_t n = range_m_.defined() ? range_m_.numel() + range_v_.numel() : 0;
  for (const auto& [name, t] : flat_slots_) n += t.numel();
  if (!flat_)
    for (const auto& m : slots_)
      for (const auto& [name, t] : m) n += t.numel();
  return n;
}

void AdamW::ensure_range_state() {
  // Whole-size buffers that flat_state_buffers() did not make were loaded (load_state): they hold the truth.
  const bool loaded = has_flat_slot("exp_avg") && &flat_slot("exp_avg").impl() != whole_from_range_;
  if (range_m_.defined() && !loaded) return;
  if (loaded) {
    range_m_ = flat_slot("exp_avg").slice(0, range_begin_, range_end_).clone();
    range_v_ = flat_slot("exp_avg_sq").slice(0, range_begin_, range_end_).clone();
  } else {
    range_m_ = Tensor::zeros({range_end_ - range_begin_}, flat_->dtype(), flat_->device());
    range_v_ = Tensor::zeros({range_end_ - range_begin_}, flat_->dtype(), flat_->device());
  }
  drop_whole_state();
}

void AdamW::drop_whole_state() {
  flat_slots_.clear();
  for (auto& m : slots_) {
    m.erase("exp_avg");
    m.erase("exp_avg_sq");
  }
  whole_from_range_ = nullptr;
}

void AdamW::flat_step() {
  PendingClip clip = take_pending_clip();
  // The state buffers (made by prepare_update) and the flat offset of their first value: whole-size, or (ranged)
  // just the range.
  const bool ranged = range_end_ >= 0;
  const Tensor m = ranged ? range_m_ : flat_slot("exp_avg");
  const Tensor v = ranged ? range_v_ : flat_slot("exp_avg_sq");
  const int64_t base = ranged ? range_begin_ : 0;
  const Tensor& p = flat_->params();
  const Tensor& g = flat_->grads();
  if (flat_->size() == 0) return;
  // The updated range (everything unless set_flat_range) and the group ends relative to its start.
  const int64_t r0 = range_begin_, r1 = range_end_ < 0 ? flat_->size() : range_end_;
  std::vector<std::pair<int64_t, double>> group_ends;
  for (const auto& [end, weight_decay] : flat_->group_ends())
    group_ends.emplace_back(std::clamp(end, r0, r1) - r0, weight_decay);
  if (flat_->device().is_cpu()) {
    const PreparedScalars& ps = prepared_scalars_;
    int64_t begin = 0;
    for (const auto& [end, weight_decay] : group_ends) {
      AdamWStep s{ps.lr, weight_decay, beta1_, beta2_, eps_, ps.bias_correction1, ps.bias_correction2_sqrt};
      const int64_t at = r0 + begin;
      VT_DISPATCH_FLOAT(p.dtype(), "adamw", [&] {
        adamw_update(p.data<scalar_t>() + at, g.data<scalar_t>() + at, m.data<scalar_t>() + (at - base),
                     v.data<scalar_t>() + (at - base), end - begin, s,
                     make_fused_ema_loop<scalar_t>(ema_.buffer, ema_.decay, at));
      });
      begin = end;
    }
    return;
  }
  // Everything here is the same at every step (graph capture): the step's values come from device_step_scalars().
  const kernels::cuda::FlatGroups flat_groups = kernels::cuda::make_flat_groups(group_ends);
  const kernels::cuda::AdamWHyper hyper{static_cast<float>(beta1_),
                                        static_cast<float>(beta2_),
                                        static_cast<float>(eps_),
                                        static_cast<float>(1.0 - beta1_),
                                        static_cast<float>(1.0 - beta2_),
                                        static_cast<const kernels::cuda::AdamWStepScalars*>(
                                            device_step_scalars(sizeof(kernels::cuda::AdamWStepScalars)))};
  kernels::cuda::DeviceClip device_clip;
  if (clip.partials.defined())
    device_clip = {clip.partials.data<double>(), clip.norm.data<float>(), static_cast<float>(clip.max_norm)};
  kernels::cuda::FusedEma device_ema;
  if (ema_.buffer.defined())
    device_ema = {ema_.buffer.data<float>() + r0, static_cast<float>(ema_.decay), static_cast<float>(1.0 - ema_.decay)};
  return kernels::on_cuda(flat_->device(), [&](kernels::Cuda c) {
    if (r1 == r0) {  // an empty range: nothing to update, but a clip's norm is still written
      if (device_clip.partials)
        kernels::cuda::grad_norm_from_partials(device_clip.norm, device_clip.partials, c.stream);
      return;
    }
    kernels::cuda::adamw_flat_step(p.data<float>() + r0, g.data<float>() + r0, m.data<float>() + (r0 - base),
                                   v.data<float>() + (r0 - base), r1 - r0, flat_groups, hyper, device_clip, device_ema,
                                   c.stream);
  });
}

}  // namespace vt::optim
