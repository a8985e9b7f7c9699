// Reductions over dims and their gradients.
#pragma once
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace vt::ops {

/// Sum over `dims` (all dims when empty).
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
/// Max over one dim: values (differentiable, gradient to the arg-max) and i64 indices.
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);

}  // namespace vt::ops
