// Reductions over dims and their gradients.
#pragma once
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace vt::ops {

/// Sum over `dims` (all dims when empty), in x's dtype (CUDA accumulates bf16/f32 in f32, f64 in f64).
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
/// Sum over `dims` times 1/count (one rounding on CUDA).
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
/// Max over one dim: values (differentiable, gradient to the arg-max) and i64 indices.
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
/// The i64 indices of max(x, dim, keepdim), without autograd.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);

}  // namespace vt::ops
