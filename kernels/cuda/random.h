// Host-visible launchers of the CUDA random fills and dropout masks. Element i of a draw that starts at `offset`
// is the same pure function of (seed, offset, i) as in kernels/cpu/random.h (core/rng.h), so a device draw gives
// the CPU's values for the same generator state: uniform_fill, bernoulli_fill and the dropout masks bit for bit;
// normal/trunc_normal up to the last-ulp differences of the device's log/sin/cos/erf.
// Used by ops::uniform_/normal_/trunc_normal_/bernoulli and ops::dropout/drop_path on CUDA tensors.
// The draws of a training step take `offset_shift` (nullable): a device value added to `offset` when the kernel runs,
// so a CUDA graph captured once draws fresh numbers at every replay (Generator::device_shift, engine/graph_step.h).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// out[i] = lo + (hi − lo)·uniform_i, computed in f64 as on the CPU, stored as dtype (f32, f64 or bf16).
void uniform_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double lo, double hi,
                  KernelStream stream);
/// out[i] = mean + std·normal_i (Box-Muller pairs: reads uniforms 0..n, so the caller reserves n + 1 values).
void normal_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std,
                 KernelStream stream);
/// out[i] = normal(mean, std) truncated to [a, b] by inverting the CDF (timm's trunc_normal_).
void trunc_normal_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std,
                       double a, double b, KernelStream stream);
/// out[i] = 1 if uniform_i < p else 0 (u8), the draw starting at offset + *offset_shift.
void bernoulli_fill(uint8_t* out, int64_t n, uint64_t seed, uint64_t offset, const uint64_t* offset_shift, double p,
                    KernelStream stream);
/// mask[r] = uniform_r < keep_prob and y[r, j] = x[r, j]·mask[r]·scale over (rows × inner) of dtype; the mask is
/// the CPU's bernoulli_fill(mask, rows, seed, offset, keep_prob).
void dropout_forward(DType dtype, void* y, uint8_t* mask, const void* x, int64_t rows, int64_t inner, uint64_t seed,
                     uint64_t offset, const uint64_t* offset_shift, double keep_prob, double scale,
                     KernelStream stream);
/// out[r, j] = in[r, j]·mask[r]·scale (the backward of dropout and drop_path).
void masked_scale(DType dtype, void* out, const void* in, const uint8_t* mask, int64_t rows, int64_t inner,
                  double scale, KernelStream stream);

}  // namespace vt::kernels::cuda
