#include "kernels/cpu/reduce.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace vt::kernels::cpu {

namespace {

template <typename T>
void sum_rows_impl(T* o, const T* x, int64_t outer, int64_t R) {
#pragma omp parallel for if (outer * R > 65536) schedule(static)
  for (int64_t i = 0; i < outer; ++i) {
    double acc = 0;  // accumulate in double: the sums feed gradient checks and loss means
    const T* row = x + i * R;
    for (int64_t r = 0; r < R; ++r) acc += row[r];
    o[i] = static_cast<T>(acc);
  }
}

template <typename T>
void sum_leading_impl(T* o, const T* x, int64_t R, int64_t inner) {
  // Columns split across threads in blocks of 256; each thread walks the rows in order.
#pragma omp parallel for if (R * inner > 65536) schedule(static)
  for (int64_t c0 = 0; c0 < inner; c0 += 256) {
    const int64_t c1 = std::min(inner, c0 + 256);
    T acc[256] = {};
    for (int64_t r = 0; r < R; ++r) {
      const T* row = x + r * inner;
      for (int64_t c = c0; c < c1; ++c) acc[c - c0] += row[c];
    }
    for (int64_t c = c0; c < c1; ++c) o[c] = acc[c - c0];
  }
}

template <typename T>
void max_rows_impl(T* v, int64_t* indices, const T* x, int64_t outer, int64_t R) {
  for (int64_t i = 0; i < outer; ++i) {
    const T* row = x + i * R;
    int64_t best = 0;
    for (int64_t r = 1; r < R; ++r)
      if (row[r] > row[best]) best = r;
    if (v) v[i] = row[best];
    indices[i] = best;
  }
}

}  // namespace

void sum_rows(DType dtype, void* out, const void* in, int64_t outer, int64_t R) {
  VT_DISPATCH_FLOAT(dtype, "sum",
                    [&] { sum_rows_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(in), outer, R); });
}

void sum_leading(DType dtype, void* out, const void* in, int64_t R, int64_t inner) {
  VT_DISPATCH_FLOAT(dtype, "sum",
                    [&] { sum_leading_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(in), R, inner); });
}

void max_rows(DType dtype, void* values, int64_t* indices, const void* in, int64_t outer, int64_t R) {
  VT_CHECK(R > 0, "[max] cannot reduce an empty dim");
  VT_DISPATCH_FLOAT(dtype, "max", [&] {
    max_rows_impl(static_cast<scalar_t*>(values), indices, static_cast<const scalar_t*>(in), outer, R);
  });
}

}  // namespace vt::kernels::cpu
