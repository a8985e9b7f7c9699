// Shapes and strides (in elements), and the broadcasting rule.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
std::string to_string(const Shape& s);
Shape contiguous_strides(const Shape& s);
/// NumPy broadcasting of two shapes; throws naming `op` when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/// Wraps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace vt
