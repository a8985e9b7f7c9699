// Random fills (Philox, reproducible across devices) and the stochastic regularisers.
#pragma once
#include "core/rng.h"
#include "tensor/tensor.h"

namespace vt::ops {

/// In-place fills, no autograd. On CUDA (f32, f64 or bf16) element i gets the CPU's value for the same generator
/// state: uniform_ bit for bit, normal_/trunc_normal_ up to the device's last-ulp log/sin/cos/erf differences.
void uniform_(const Tensor& t, double lo, double hi, Generator& gen = default_generator());
/// Fills with normal(mean, std) (Box-Muller over Philox uniforms).
void normal_(const Tensor& t, double mean, double std, Generator& gen = default_generator());
/// timm's trunc_normal_(std=0.02): normal(mean, std) truncated to [a, b] (absolute bounds, as timm).
void trunc_normal_(const Tensor& t, double mean, double std, double a, double b, Generator& gen = default_generator());
/// u8 mask on `device`: 1 with probability p (the same mask on every device for the same generator state).
Tensor bernoulli(const Shape& shape, double p, Generator& gen = default_generator(), Device device = cpu());

/// Inverted dropout: zeroes with probability p and scales the rest by 1/(1-p); identity when !training or p = 0.
/// The keep mask is the CPU's on every device (CUDA: f32, f64 or bf16).
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen = default_generator());
/// Stochastic depth: drops whole samples (dim 0) with probability p and scales survivors by 1/(1-p).
Tensor drop_path(const Tensor& x, double p, bool training, Generator& gen = default_generator());

}  // namespace vt::ops
