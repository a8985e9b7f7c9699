// Optimizer updates over flat f32 buffers on the device: every parameter of a model in one launch (parameters,
// gradients and optimizer state each live in one buffer, in the same layout; see src/optim/flat_buffers.h). Parameter
// groups are contiguous ranges of the buffers, each with its weight decay. Everything that changes from one step to the
// next (learning rate, bias corrections, SGD's first step) is read from a small device struct written by a one-thread
// launch before the update, so the update launch itself has the same arguments at every step and can be captured in
// a CUDA graph and replayed. Gradient clipping needs no host synchronization either: grad_norm_partials writes the
// partial sums of squares, and every block of the update finishes the global norm from them itself (the sum
// global_grad_norm does, in the same order), so clip + update is two launches. An EMA of the parameters (timm
// ModelEmaV2) can ride along: right after an element's new value is written, its EMA element is updated from it.
#pragma once
#include "kernels/device_handles.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace vt::kernels::cuda {

/// Contiguous ranges [end[i-1], end[i]) of the flat buffers with their weight decay; every end is a multiple of 4
/// elements and the last one is the buffer size.
struct FlatGroups {
  static constexpr int kMax = 8;
  int count = 0;
  int64_t end[kMax] = {};
  float weight_decay[kMax] = {};
};

/// FlatGroups from (end offset, weight decay) pairs in order; throws beyond kMax groups.
FlatGroups make_flat_groups(const std::vector<std::pair<int64_t, double>>& group_ends);

/// Gradient clipping applied inside an update: g·min(1, max_norm / (norm + 1e-6)) (a NaN norm gives NaN, as torch),
/// where norm is finished from grad_norm_partials' sums (bit for bit global_grad_norm's value) and written to *norm
/// by the update. partials == nullptr: no clipping.
struct DeviceClip {
  const double* partials = nullptr;  // grad_norm_workspace_size() partial sums from grad_norm_partials
  float* norm = nullptr;             // receives the f32 global norm (may be nullptr)
  float max_norm = 0.0f;
};

/// An EMA fused into an update: after p[i] is written, ema[i] = decay·ema[i] + (1 - decay)·p[i], rounded as
/// ModelEma's three f32 ops (each product and the sum rounded once, no FMA). ema == nullptr: no EMA.
struct FusedEma {
  float* ema = nullptr;          // same layout and length as the updated parameters
  float decay = 0.0f;            // float(decay)
  float one_minus_decay = 0.0f;  // float(1 - decay), computed in double on the host
};

/// AdamW's values of one step, in device memory; f32 roundings of the host's double values.
struct AdamWStepScalars {
  float lr;
  float bias_correction1;       // 1 - beta1^t
  float bias_correction2_sqrt;  // sqrt(1 - beta2^t)
};

/// AdamW's constants plus where its per-step values live: the same at every step.
struct AdamWHyper {
  float beta1, beta2, eps;
  float one_minus_beta1, one_minus_beta2;  // computed in double on the host: 1.0f - 0.999f is off by 1.3e-5
  const AdamWStepScalars* scalars;         // device memory, written by set_adamw_step_scalars
};

/// SGD's values of one step, in device memory.
struct SgdStepScalars {
  float lr;
  int first_step;  // 1: the momentum buffer starts as d
};

/// Writes one step's AdamW values to device memory `dst` with a one-thread launch on `stream` (not for graph capture).
void set_adamw_step_scalars(AdamWStepScalars* dst, const AdamWStepScalars& values, KernelStream stream);
/// Writes one step's SGD values to device memory `dst` with a one-thread launch on `stream` (not for graph capture).
void set_sgd_step_scalars(SgdStepScalars* dst, const SgdStepScalars& values, KernelStream stream);

/// torch.optim.AdamW (amsgrad off) on n elements: p -= lr·wd·p; m, v moving averages of g and g²; p -= lr/bc1 · m /
/// (sqrt(v)/sqrt(bc2) + eps), lr and the bias corrections read from *hyper.scalars. n a multiple of 4, pointers
/// 16-byte aligned. With a clip, *clip.norm is written even when n == 0.
void adamw_flat_step(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                     const FlatGroups& groups, const AdamWHyper& hyper, DeviceClip clip, FusedEma ema,
                     KernelStream stream);

/// torch.optim.SGD (dampening 0): d = g + wd·p; with momentum buf = d (first step) or momentum·buf + d, and d =
/// nesterov ? d + momentum·buf : buf; p -= lr·d, lr and the first-step flag read from *scalars. momentum_buf ==
/// nullptr: no momentum. With a clip, *clip.norm is written even when n == 0.
void sgd_flat_step(float* param, const float* grad, float* momentum_buf, int64_t n, const FlatGroups& groups,
                   float momentum, bool nesterov, const SgdStepScalars* scalars, DeviceClip clip, FusedEma ema,
                   KernelStream stream);

/// Number of doubles of the workspace (the partial sums) of grad_norm_partials and global_grad_norm.
int64_t grad_norm_workspace_size();
/// partials[0, grad_norm_workspace_size()) = partial sums in f64 of grad[i]² over n elements (n a multiple of 4,
/// 16-byte aligned), in a fixed order; one launch. A DeviceClip or grad_norm_from_partials finishes the norm.
void grad_norm_partials(double* partials, const float* grad, int64_t n, KernelStream stream);
/// *norm = sqrt of the sum of grad_norm_partials' sums, added in a fixed order; one single-block launch.
void grad_norm_from_partials(float* norm, const double* partials, KernelStream stream);
/// *norm = sqrt(sum of grad[i]²) over n elements (n a multiple of 4, 16-byte aligned), summed in f64 in a fixed order
/// (deterministic): grad_norm_partials then grad_norm_from_partials, no host synchronization.
void global_grad_norm(float* norm, double* workspace, const float* grad, int64_t n, KernelStream stream);

}  // namespace vt::kernels::cuda
