// Optimizer updates over flat f32 buffers on the device: every parameter of a model in one launch (parameters,
// gradients and optimizer state each live in one buffer, in the same layout; see src/optim/flat_buffers.h). Parameter
// groups are contiguous ranges of the buffers, each with its weight decay. Everything that changes from one step to the
// next (learning rate, bias corrections, SGD's first step) is read from a small device struct written by a one-thread
// launch before the update, so the update launch itself has the same arguments at every step and can be captured in
// a CUDA graph and replayed. The gradient-clipping coefficient is read from device memory too (the global norm written
// by global_grad_norm), so neither needs a host synchronization. An EMA of the parameters (timm ModelEmaV2) can ride
// along: right after an element's new value is written, its EMA element is updated from it.
#pragma once
#include <cuda_runtime.h>

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

/// Gradient clipping applied inside an update: g·min(1, max_norm / (*norm + 1e-6)) (a NaN norm gives NaN, as torch).
/// norm == nullptr: no clipping.
struct DeviceClip {
  const float* norm = nullptr;
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
void set_adamw_step_scalars(AdamWStepScalars* dst, const AdamWStepScalars& values, cudaStream_t stream);
/// Writes one step's SGD values to device memory `dst` with a one-thread launch on `stream` (not for graph capture).
void set_sgd_step_scalars(SgdStepScalars* dst, const SgdStepScalars& values, cudaStream_t stream);

/// torch.optim.AdamW (amsgrad off) on n elements: p -= lr·wd·p; m, v moving averages of g and g²; p -= lr/bc1 · m /
/// (sqrt(v)/sqrt(bc2) + eps), lr and the bias corrections read from *hyper.scalars. n a multiple of 4, pointers
/// 16-byte aligned.
void adamw_flat_step(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                     const FlatGroups& groups, const AdamWHyper& hyper, DeviceClip clip, FusedEma ema,
                     cudaStream_t stream);

/// torch.optim.SGD (dampening 0): d = g + wd·p; with momentum buf = d (first step) or momentum·buf + d, and d =
/// nesterov ? d + momentum·buf : buf; p -= lr·d, lr and the first-step flag read from *scalars. momentum_buf ==
/// nullptr: no momentum.
void sgd_flat_step(float* param, const float* grad, float* momentum_buf, int64_t n, const FlatGroups& groups,
                   float momentum, bool nesterov, const SgdStepScalars* scalars, DeviceClip clip, FusedEma ema,
                   cudaStream_t stream);

/// Number of doubles of the workspace global_grad_norm needs.
int64_t grad_norm_workspace_size();
/// *norm = sqrt(sum of grad[i]²) over n elements (n a multiple of 4, 16-byte aligned), summed in f64 in a fixed order
/// (deterministic); two launches, no host synchronization.
void global_grad_norm(float* norm, double* workspace, const float* grad, int64_t n, cudaStream_t stream);

}  // namespace vt::kernels::cuda
