// Joining, splitting and indexing ops.
#pragma once
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace vt::ops {

Tensor concat(const std::vector<Tensor>& xs, int64_t dim);
/// Splits along `dim` into pieces of the given sizes (they must add up to size(dim)); the pieces are views.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
/// Rows of x along `dim` picked by the 1-D i64 `index`.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// out[i][j][k] = x[i][index[i][j][k]][k] for dim = 1 (torch.gather); index is i64 with x's rank.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// out = base; out[i][index[i][j][k]][k] += src[i][j][k] for dim = 1 (torch.scatter_add).
Tensor scatter_add(const Tensor& base, int64_t dim, const Tensor& index, const Tensor& src);
/// k largest along `dim`, sorted descending (ties: lower index first): values (differentiable) and i64 indices.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1);

}  // namespace vt::ops
