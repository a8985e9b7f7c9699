// Weight initialisers matching timm / PyTorch defaults.
#pragma once
#include "core/rng.h"
#include "tensor/tensor.h"

namespace vt::nn::init {

/// timm trunc_normal_(std) with absolute bounds [-2, 2].
void trunc_normal(const Tensor& t, double std, Generator& gen);
/// PyTorch's default for Linear/Conv weights (kaiming_uniform, a=√5): U(−1/√fan_in, 1/√fan_in).
void default_uniform(const Tensor& t, int64_t fan_in, Generator& gen);
void zeros(const Tensor& t);
void ones(const Tensor& t);

}  // namespace vt::nn::init
