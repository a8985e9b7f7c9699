#include "kernels/cpu/index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "core/shape.h"
#include "kernels/strided.h"

namespace vt::kernels::cpu {

namespace {

template <typename T>
void index_add_impl(T* out, const T* src, const int64_t* idx, int64_t outer, int64_t n, int64_t k, int64_t inner) {
#pragma omp parallel for if (outer * k * inner > 65536 && outer > 1) schedule(static)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j) {
      T* dst = out + (o * n + idx[j]) * inner;
      const T* s = src + (o * k + j) * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] += s[i];
    }
}

template <typename T>
void gather_impl(T* out, const T* x, const std::vector<int64_t>& x_strides, const int64_t* index,
                 const std::vector<int64_t>& shape, int64_t dim) {
  // Walk the index shape with x's `dim` stride zeroed; the index value supplies that coordinate.
  std::vector<int64_t> xs = x_strides;
  const int64_t step = xs[dim];
  xs[dim] = 0;
  auto layout = coalesce<2>(shape, {xs, contiguous_strides_of(shape)});
  for_each_row(layout, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t pos = off[1] + j * st[1];
      out[pos] = x[off[0] + j * st[0] + index[pos] * step];
    }
  });
}

template <typename T>
void scatter_add_impl(T* out, const std::vector<int64_t>& out_strides, const T* src,
                      const std::vector<int64_t>& src_strides, const int64_t* index, const std::vector<int64_t>& shape,
                      int64_t dim) {
  std::vector<int64_t> os = out_strides;
  const int64_t step = os[dim];
  os[dim] = 0;
  auto layout = coalesce<3>(shape, {os, src_strides, contiguous_strides_of(shape)});
  for_each_row(layout, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    for (int64_t j = 0; j < n; ++j)
      out[off[0] + j * st[0] + index[off[2] + j * st[2]] * step] += src[off[1] + j * st[1]];
  });
}

template <typename T>
void topk_impl(T* values, int64_t* indices, const T* x, int64_t outer, int64_t R, int64_t k) {
#pragma omp parallel for if (outer * R > 65536) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    const T* row = x + o * R;
    std::vector<int64_t> order(static_cast<size_t>(R));
    std::iota(order.begin(), order.end(), 0);
    // A strict weak order: NaN above every number; equal values ordered by position.
    auto before = [row](int64_t a, int64_t b) {
      const T va = row[a], vb = row[b];
      const bool na = std::isnan(static_cast<double>(va)), nb = std::isnan(static_cast<double>(vb));
      if (na != nb) return na;
      if (!na && va != vb) return va > vb;
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (int64_t j = 0; j < k; ++j) {
      indices[o * k + j] = order[j];
      if (values) values[o * k + j] = row[order[j]];
    }
  }
}

}  // namespace

void index_select_rows(DType dtype, void* out, const void* x, const int64_t* idx, int64_t outer, int64_t n, int64_t k,
                       int64_t inner) {
  const size_t row_bytes = static_cast<size_t>(inner) * dtype_size(dtype);
  auto* dst = static_cast<char*>(out);
  const auto* src = static_cast<const char*>(x);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(dst + (o * k + j) * row_bytes, src + (o * n + idx[j]) * row_bytes, row_bytes);
}

void index_add_rows(DType dtype, void* out, const void* src, const int64_t* idx, int64_t outer, int64_t n, int64_t k,
                    int64_t inner) {
  VT_DISPATCH_FLOAT(dtype, "index_add", [&] {
    index_add_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(src), idx, outer, n, k, inner);
  });
}

void gather_strided(DType dtype, void* out, const void* x, const std::vector<int64_t>& x_strides, const int64_t* index,
                    const std::vector<int64_t>& shape, int64_t dim) {
  if (vt::numel(shape) == 0) return;
  VT_DISPATCH_ALL(dtype, "gather", [&] {
    gather_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(x), x_strides, index, shape, dim);
  });
}

void scatter_add_strided(DType dtype, void* out, const std::vector<int64_t>& out_strides, const void* src,
                         const std::vector<int64_t>& src_strides, const int64_t* index,
                         const std::vector<int64_t>& shape, int64_t dim) {
  if (vt::numel(shape) == 0) return;
  VT_DISPATCH_FLOAT(dtype, "scatter_add", [&] {
    scatter_add_impl(static_cast<scalar_t*>(out), out_strides, static_cast<const scalar_t*>(src), src_strides, index,
                     shape, dim);
  });
}

void topk_rows(DType dtype, void* values, int64_t* indices, const void* x, int64_t outer, int64_t R, int64_t k) {
  VT_DISPATCH_FLOAT(dtype, "topk", [&] {
    topk_impl(static_cast<scalar_t*>(values), indices, static_cast<const scalar_t*>(x), outer, R, k);
  });
}

}  // namespace vt::kernels::cpu
