#include "ops/head_layout.h"

namespace vt::ops {

Tensor empty_bnhd(int64_t B, int64_t H, int64_t N, int64_t d, DType dtype, Device dev) {
  Tensor base = Tensor::empty({B, N, H, d}, dtype, dev);
  return make_view(base, {B, H, N, d}, {N * H * d, d, H * d, 1}, 0);
}

Tensor row_contiguous(const Tensor& t) {
  Tensor x = t.detach();
  return x.strides().back() == 1 || x.shape().back() == 1 ? x : x.contiguous();
}

kernels::AttentionView head_view(const Tensor& t) {
  auto stride = [&](int i) { return t.size(i) == 1 ? 0 : t.strides()[i]; };
  return {t.raw_data(), stride(0), stride(1), stride(2)};
}

}  // namespace vt::ops
