#include "models/rope.h"

#include <cmath>
#include <vector>

#include "core/error.h"
#include "models/attention.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::models {

namespace {
// Angles of one token on a side×side grid at (row, col): half 0 by row, half 1 by column. rope.py builds t as
// arange(side) / side · side in f32 and the frequencies in f32; the same roundings here.
void grid_angles(int64_t side, double theta, int64_t half, std::vector<double>& out) {
  const int64_t pairs = half / 2;
  std::vector<float> freq(pairs);
  for (int64_t j = 0; j < pairs; ++j)
    freq[j] = static_cast<float>(
        1.0 / std::pow(theta, static_cast<double>(static_cast<float>(2 * j) / static_cast<float>(half))));
  for (int64_t row = 0; row < side; ++row)
    for (int64_t col = 0; col < side; ++col)
      for (int64_t axis : {row, col}) {
        const float t = static_cast<float>(axis) / static_cast<float>(side) * static_cast<float>(side);
        for (int64_t j = 0; j < pairs; ++j) out.push_back(static_cast<double>(t * freq[j]));
      }
}
}  // namespace

std::pair<Tensor, Tensor> rotary_tables(int64_t grid, int64_t registers, int64_t head_dim, double register_theta) {
  VT_CHECK(head_dim > 0 && head_dim % 4 == 0, "[model] ViT-5's rotary embedding needs a head width that is a ",
           "multiple of 4 (two halves of channel pairs), got ", head_dim);
  const int64_t reg_side = square_side(registers);
  VT_CHECK(grid > 0 && reg_side >= 0, "[model] ViT-5's registers must be a square number (", registers,
           ") and the patch grid positive (", grid, ")");
  const int64_t half = head_dim / 2;
  std::vector<double> angles(half / 2 * 2, 0.0);  // CLS: angle 0, no rotation
  grid_angles(grid, 10000.0, half, angles);
  grid_angles(reg_side, register_theta, half, angles);
  std::vector<double> c(angles.size()), s(angles.size());
  for (size_t i = 0; i < angles.size(); ++i) {  // in f32, as rope.py
    c[i] = std::cos(static_cast<float>(angles[i]));
    s[i] = std::sin(static_cast<float>(angles[i]));
  }
  const int64_t N = 1 + grid * grid + registers;
  const Shape shape{N, 1, half, 1};
  return {Tensor::from_vector(c, shape, DType::f32), Tensor::from_vector(s, shape, DType::f32)};
}

Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  VT_CHECK(x.dim() == 4 && cos.dim() == 4 && x.size(1) == cos.size(0) && x.size(3) == 2 * cos.size(2),
           "[rope] expected x [B, N, H, d] with N = ", cos.size(0), " and d = ", 2 * cos.size(2), ", got ",
           x.describe());
  const int64_t B = x.size(0), N = x.size(1), H = x.size(2), d = x.size(3);
  const Tensor c = nn::cast_to(cos, x.dtype()), s = nn::cast_to(sin, x.dtype());
  const Tensor pairs = x.reshape({B, N, H, d / 2, 2});
  const Tensor a = pairs.slice(4, 0, 1), b = pairs.slice(4, 1, 2);
  return ops::concat({a * c - b * s, b * c + a * s}, 4).reshape({B, N, H, d});
}

}  // namespace vt::models
