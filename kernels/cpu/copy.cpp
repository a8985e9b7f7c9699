#include "kernels/cpu/copy.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/strided.h"

namespace vt::kernels::cpu {

namespace {
template <typename D, typename S>
D convert(S v) {
  if constexpr (std::is_same_v<D, bf16>) return bf16(static_cast<float>(v));
  else if constexpr (std::is_same_v<S, bf16>) return static_cast<D>(static_cast<float>(v));
  else return static_cast<D>(v);
}
}  // namespace

void copy_strided(void* dst, DType dst_dtype, const std::vector<int64_t>& dst_strides, const void* src, DType src_dtype,
                  const std::vector<int64_t>& src_strides, const std::vector<int64_t>& shape) {
  auto layout = coalesce<2>(shape, {dst_strides, src_strides});
  VT_DISPATCH_ALL(dst_dtype, "copy", [&] {
    using D = scalar_t;
    VT_DISPATCH_ALL(src_dtype, "copy", [&] {
      using S = scalar_t;
      D* d = static_cast<D*>(dst);
      const S* s = static_cast<const S*>(src);
      for_each_row(layout, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
        D* dp = d + off[0];
        const S* sp = s + off[1];
        if (st[0] == 1 && st[1] == 1) {
          for (int64_t i = 0; i < n; ++i) dp[i] = convert<D>(sp[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = convert<D>(sp[i * st[1]]);
        }
      });
    });
  });
}

void fill(void* dst, DType dtype, int64_t n, double value) {
  VT_DISPATCH_ALL(dtype, "fill", [&] {
    scalar_t v = convert<scalar_t>(value);
    std::fill_n(static_cast<scalar_t*>(dst), n, v);
  });
}

}  // namespace vt::kernels::cpu
