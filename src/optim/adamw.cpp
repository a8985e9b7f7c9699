// AdamW update loop (CPU, OpenMP over elements). Arithmetic is in double on the stored f32 values, which stays
// within rounding of torch's float ops. With flat buffers: one loop per group on the CPU, one fused kernel
// launch for everything on CUDA (kernels/cuda/adamw.h).
#include "optim/adamw.h"

#include <algorithm>
#include <cmath>

#include "optim/flat_buffers.h"
#ifdef VT_WITH_CUDA
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/stream.h"
#endif

namespace vt::optim {

namespace {

struct AdamWStep {
  double lr, weight_decay, beta1, beta2, eps, bias_correction1, bias_correction2_sqrt;
};

template <typename T>
void adamw_update(T* p, const T* g, T* m, T* v, int64_t n, const AdamWStep& s) {
  const double decay = 1.0 - s.lr * s.weight_decay;
  const double step_size = s.lr / s.bias_correction1;
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double gi = g[i];
    m[i] = static_cast<T>(s.beta1 * m[i] + (1.0 - s.beta1) * gi);
    v[i] = static_cast<T>(s.beta2 * v[i] + (1.0 - s.beta2) * gi * gi);
    const double denom = std::sqrt(static_cast<double>(v[i])) / s.bias_correction2_sqrt + s.eps;
    p[i] = static_cast<T>(p[i] * decay - step_size * static_cast<double>(m[i]) / denom);
  }
}

}  // namespace

AdamW::AdamW(std::vector<ParamGroup> groups, double lr, double beta1, double beta2, double eps)
    : Optimizer(std::move(groups), lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
  VT_CHECK(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0, "[adamw] betas must be in [0, 1), got (",
           beta1, ", ", beta2, ")");
  VT_CHECK(eps >= 0.0, "[adamw] eps must be >= 0, got ", eps);
}

void AdamW::step() {
  ++step_count_;
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
    AdamWStep s{lr,
                group.weight_decay,
                beta1_,
                beta2_,
                eps_,
                1.0 - std::pow(beta1_, t),
                std::sqrt(1.0 - std::pow(beta2_, t))};
    VT_DISPATCH_FLOAT(p.dtype(), "adamw", [&] {
      adamw_update(p.data<scalar_t>(), grad.data<scalar_t>(), m.data<scalar_t>(), v.data<scalar_t>(), p.numel(),
                   s);
    });
  });
}

void AdamW::set_flat_range(int64_t begin, int64_t end) {
  VT_CHECK(flat_, "[adamw] set_flat_range needs flat buffers (use_flat_buffers())");
  VT_CHECK(0 <= begin && begin <= end && end <= flat_->size() && begin % 4 == 0 && (end % 4 == 0 || end == flat_->size()),
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
  const double t = static_cast<double>(begin_flat_step());
  PendingClip clip = take_pending_clip();
  // The state buffers and the flat offset of their first value: whole-size, or (ranged) just the range.
  const bool ranged = range_end_ >= 0;
  if (ranged) {
    ensure_range_state();
    drop_whole_state();  // a gathered copy would go stale with this step
  }
  const Tensor m = ranged ? range_m_ : flat_slot("exp_avg");
  const Tensor v = ranged ? range_v_ : flat_slot("exp_avg_sq");
  const int64_t base = ranged ? range_begin_ : 0;
  const double bias_correction1 = 1.0 - std::pow(beta1_, t);
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(beta2_, t));
  const Tensor& p = flat_->params();
  const Tensor& g = flat_->grads();
  if (flat_->size() == 0) return;
  // The updated range (everything unless set_flat_range) and the group ends relative to its start.
  const int64_t r0 = range_begin_, r1 = range_end_ < 0 ? flat_->size() : range_end_;
  std::vector<std::pair<int64_t, double>> group_ends;
  for (const auto& [end, weight_decay] : flat_->group_ends())
    group_ends.emplace_back(std::clamp(end, r0, r1) - r0, weight_decay);
  if (flat_->device().is_cpu()) {
    int64_t begin = 0;
    for (const auto& [end, weight_decay] : group_ends) {
      AdamWStep s{lr, weight_decay, beta1_, beta2_, eps_, bias_correction1, bias_correction2_sqrt};
      const int64_t at = r0 + begin;
      VT_DISPATCH_FLOAT(p.dtype(), "adamw", [&] {
        adamw_update(p.data<scalar_t>() + at, g.data<scalar_t>() + at, m.data<scalar_t>() + (at - base),
                     v.data<scalar_t>() + (at - base), end - begin, s);
      });
      begin = end;
    }
    return;
  }
  if (r1 == r0) return;
#ifdef VT_WITH_CUDA
  const kernels::cuda::FlatGroups flat_groups = kernels::cuda::make_flat_groups(group_ends);
  const kernels::cuda::AdamWHyper hyper{static_cast<float>(lr),    static_cast<float>(beta1_),
                                        static_cast<float>(beta2_), static_cast<float>(eps_),
                                        static_cast<float>(1.0 - beta1_),
                                        static_cast<float>(1.0 - beta2_),
                                        static_cast<float>(bias_correction1),
                                        static_cast<float>(bias_correction2_sqrt)};
  kernels::cuda::DeviceClip device_clip;
  if (clip.norm.defined()) device_clip = {clip.norm.data<float>(), static_cast<float>(clip.max_norm)};
  kernels::cuda::DeviceGuard guard(flat_->device().index);
  kernels::cuda::adamw_flat_step(p.data<float>() + r0, g.data<float>() + r0, m.data<float>() + (r0 - base),
                                 v.data<float>() + (r0 - base), r1 - r0, flat_groups, hyper, device_clip,
                                 kernels::cuda::current_stream());
#else
  fail_without_cuda("adamw", flat_->device());
#endif
}

}  // namespace vt::optim
