// Iteration over N-d strided layouts. `for_each_offset` walks a shape in row-major order and hands the inner
// loop (over the last dim) to a callback with each operand's base offset, so the hot loop stays a plain
// strided loop the compiler can vectorise. Dims that can be merged are merged first.
// Host code shared by the CPU kernels and the CUDA launchers.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace vt::kernels {

inline std::vector<int64_t> contiguous_strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = acc;
    acc *= shape[i];
  }
  return st;
}

template <size_t K>
struct StridedLayout {
  std::vector<int64_t> shape;
  std::array<std::vector<int64_t>, K> strides;
};

/// Merges adjacent dims that are contiguous with each other in every operand; drops size-1 dims.
template <size_t K>
StridedLayout<K> coalesce(const std::vector<int64_t>& shape, const std::array<std::vector<int64_t>, K>& strides) {
  StridedLayout<K> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !out.shape.empty();
    for (size_t k = 0; k < K && merge; ++k) merge = out.strides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      out.shape.back() *= shape[d];
      for (size_t k = 0; k < K; ++k) out.strides[k].back() = strides[k][d];
    } else {
      out.shape.push_back(shape[d]);
      for (size_t k = 0; k < K; ++k) out.strides[k].push_back(strides[k][d]);
    }
  }
  if (out.shape.empty()) {
    out.shape.push_back(1);
    for (size_t k = 0; k < K; ++k) out.strides[k].push_back(0);
  }
  return out;
}

/// fn(offsets, inner_size, inner_strides) is called once per row of the innermost dim.
template <size_t K, typename Fn>
void for_each_row(const StridedLayout<K>& L, Fn&& fn) {
  const size_t nd = L.shape.size();
  const int64_t inner = L.shape[nd - 1];
  std::array<int64_t, K> inner_strides, off{};
  for (size_t k = 0; k < K; ++k) inner_strides[k] = L.strides[k][nd - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < nd; ++d) rows *= L.shape[d];
  std::vector<int64_t> idx(nd, 0);
  for (int64_t r = 0; r < rows; ++r) {
    fn(off, inner, inner_strides);
    for (int64_t d = static_cast<int64_t>(nd) - 2; d >= 0; --d) {
      if (++idx[d] < L.shape[d]) {
        for (size_t k = 0; k < K; ++k) off[k] += L.strides[k][d];
        break;
      }
      for (size_t k = 0; k < K; ++k) off[k] -= L.strides[k][d] * (L.shape[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace vt::kernels
