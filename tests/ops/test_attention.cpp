// scaled_dot_product_attention on the CPU: bit-equal to the formula dense attention used before the op existed,
// forward against an f64 loop reference, and finite-difference gradients through strided q/k/v views of one
// qkv tensor (the model's layout).
#include <array>
#include <cmath>

#include "ops/op_harness.h"
#include "test_util.h"

namespace vt::test {
namespace {

// [B, N, 3, H, d] → q, k, v [B, H, N, d] as strided views, as models/attention.cpp slices them.
std::array<Tensor, 3> split_qkv(const Tensor& qkv) {
  Tensor t = qkv.permute({2, 0, 3, 1, 4});
  return {t.slice(0, 0, 1).squeeze(0), t.slice(0, 1, 2).squeeze(0), t.slice(0, 2, 3).squeeze(0)};
}

// softmax(scale·q·kᵀ)·v by loops over a contiguous [B, N, 3, H, d] qkv, result in [B, H, N, d] order.
std::vector<double> attention_ref(const Tensor& qkv, double scale) {
  const auto x = qkv.to_vector();
  const int64_t B = qkv.size(0), N = qkv.size(1), H = qkv.size(3), d = qkv.size(4);
  auto at = [&](int64_t b, int64_t n, int64_t which, int64_t h, int64_t c) {
    return x[(((b * N + n) * 3 + which) * H + h) * d + c];
  };
  std::vector<double> out(B * H * N * d);
  std::vector<double> p(N);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < N; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t c = 0; c < d; ++c) s += at(b, i, 0, h, c) * at(b, j, 1, h, c);
          p[j] = s * scale;
          mx = std::max(mx, p[j]);
        }
        for (int64_t j = 0; j < N; ++j) sum += p[j] = std::exp(p[j] - mx);
        for (int64_t c = 0; c < d; ++c) {
          double o = 0;
          for (int64_t j = 0; j < N; ++j) o += p[j] * at(b, j, 2, h, c);
          out[((b * H + h) * N + i) * d + c] = o / sum;
        }
      }
  return out;
}

TEST(Attention, CpuPathEqualsTheDenseFormula) {
  const int64_t B = 2, N = 7, H = 3, d = 8;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Tensor qkv = random_tensor({B, N, 3, H, d}, 11, -2, 2, DType::f32);
  auto [q, k, v] = split_qkv(qkv);
  Tensor ours = ops::scaled_dot_product_attention(q, k, v, scale);
  Tensor old = ops::matmul(ops::softmax(ops::matmul(q * scale, k.transpose(-2, -1)), -1), v);
  ASSERT_EQ(ours.shape(), (Shape{B, H, N, d}));
  EXPECT_EQ(ours.to_vector(), old.to_vector());
}

TEST(Attention, ForwardMatchesReferenceAndGradcheck) {
  for (auto [B, N, H, d] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 4}, {2, 5, 3, 4}, {1, 9, 2, 3}}) {
    OpCase c;
    const double scale = 0.7;
    c.name =
        "sdpa B" + std::to_string(B) + " N" + std::to_string(N) + " H" + std::to_string(H) + " d" + std::to_string(d);
    c.inputs = {random_tensor({B, N, 3, H, d}, 100 + N, -1.5, 1.5)};
    c.fn = [scale](const std::vector<Tensor>& in) {
      auto [q, k, v] = split_qkv(in[0]);
      return ops::scaled_dot_product_attention(q, k, v, scale);
    };
    c.reference = [scale](const std::vector<Tensor>& in) { return attention_ref(in[0], scale); };
    run_op_case(c);
  }
}

// qkv_attention on the packed [B, N, 3·H·d] layout: the CPU path against the loop reference (in [B, N, H·d]
// order) and finite-difference gradients.
TEST(Attention, PackedQkvMatchesReferenceAndGradcheck) {
  for (auto [B, N, H, d] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 4}, {2, 5, 3, 4}}) {
    OpCase c;
    const double scale = 0.6;
    c.name = "qkv_attention N" + std::to_string(N);
    c.inputs = {random_tensor({B, N, 3 * H * d}, 200 + N, -1.5, 1.5)};
    const int64_t heads = H;
    c.fn = [scale, heads](const std::vector<Tensor>& in) { return ops::qkv_attention(in[0], heads, scale); };
    c.reference = [=](const std::vector<Tensor>& in) {
      auto bhnd = attention_ref(in[0].reshape({B, N, 3, H, d}), scale);
      std::vector<double> out(bhnd.size());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t n = 0; n < N; ++n)
            for (int64_t k = 0; k < d; ++k) out[((b * N + n) * H + h) * d + k] = bhnd[((b * H + h) * N + n) * d + k];
      return out;
    };
    run_op_case(c);
  }
  expect_error([] { ops::qkv_attention(Tensor::zeros({2, 3, 10}), 2, 1.0); }, "[qkv_attention]");
}

TEST(Attention, RejectsMismatchedOperands) {
  Tensor q = Tensor::zeros({1, 2, 3, 4}), k = Tensor::zeros({1, 2, 5, 4}), v3 = Tensor::zeros({2, 3, 4});
  expect_error([&] { ops::scaled_dot_product_attention(q, k, k, 1.0); }, "shapes differ");
  expect_error([&] { ops::scaled_dot_product_attention(v3, v3, v3, 1.0); }, "[B, H, N, d]");
  expect_error([&] { ops::scaled_dot_product_attention(q, q.to(DType::f64), q, 1.0); }, "dtypes differ");
}

}  // namespace
}  // namespace vt::test
