// Random fills (Philox, reproducible across devices) and the stochastic regularisers.
#pragma once
#include "core/rng.h"
#include "tensor/tensor.h"

namespace vt::ops {

/// In-place fills, no autograd.
void uniform_(const Tensor& t, double lo, double hi, Generator& gen = default_generator());
void normal_(const Tensor& t, double mean, double std, Generator& gen = default_generator());
/// timm's trunc_normal_(std=0.02): normal(mean, std) truncated to [a, b] (absolute bounds, as timm).
void trunc_normal_(const Tensor& t, double mean, double std, double a, double b, Generator& gen = default_generator());
/// u8 mask: 1 with probability p.
Tensor bernoulli(const Shape& shape, double p, Generator& gen = default_generator());

/// Inverted dropout: zeroes with probability p and scales the rest by 1/(1-p); identity when !training or p = 0.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen = default_generator());
/// Stochastic depth: drops whole samples (dim 0) with probability p and scales survivors by 1/(1-p).
Tensor drop_path(const Tensor& x, double p, bool training, Generator& gen = default_generator());

}  // namespace vt::ops
