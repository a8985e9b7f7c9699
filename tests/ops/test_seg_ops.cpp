// The segmentation ops: bilinear interpolation (PyTorch's align_corners=False), pixel cross-entropy with an
// ignore label and L2 normalization, against plain f64 loops and hand-computed values, with finite-difference
// gradients and validation errors.
#include <algorithm>
#include <cmath>

#include "ops/op_harness.h"

namespace vt::test {
namespace {

// ---------------------------------------------------------------- interpolate_bilinear

// PyTorch's upsample_bilinear2d (align_corners=False), written out per output element in f64.
std::vector<double> bilinear_ref(const Tensor& x, int64_t oh, int64_t ow) {
  auto v = x.contiguous().to_vector();
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
  auto taps = [](int64_t d, int64_t in, int64_t out) {
    double src = std::max(0.0, (d + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5);
    int64_t i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(src)), in - 1);
    int64_t i1 = std::min<int64_t>(i0 + 1, in - 1);
    return std::tuple{i0, i1, src - static_cast<double>(i0)};
  };
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        auto [y0, y1, wy] = taps(y, H, oh);
        auto [x0, x1, wx] = taps(xx, W, ow);
        auto at = [&](int64_t r, int64_t c) { return v[(p * H + r) * W + c]; };
        out.push_back((1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) +
                      wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1)));
      }
  return out;
}

OpCase bilinear_case(const Shape& shape, int64_t oh, int64_t ow, uint64_t seed, bool transposed = false) {
  OpCase c;
  c.name = "interpolate_bilinear" + to_string(shape) + " -> " + std::to_string(oh) + "x" + std::to_string(ow) +
           (transposed ? " (H/W transposed view)" : "");
  c.inputs = {random_tensor(shape, seed, -2, 2)};
  c.fn = [oh, ow, transposed](const std::vector<Tensor>& in) {
    return ops::interpolate_bilinear(transposed ? in[0].transpose(2, 3) : in[0], oh, ow);
  };
  c.reference = [oh, ow, transposed](const std::vector<Tensor>& in) {
    return bilinear_ref(transposed ? in[0].transpose(2, 3).contiguous() : in[0], oh, ow);
  };
  return c;
}

TEST(SegOps, InterpolateBilinearMatchesReferenceAndGradcheck) {
  run_op_case(bilinear_case({2, 3, 3, 5}, 7, 4, 1));    // up in H, down in W
  run_op_case(bilinear_case({1, 2, 9, 7}, 4, 3, 2));    // down (non-integer factors)
  run_op_case(bilinear_case({1, 1, 4, 4}, 16, 16, 3));  // 4x up
  run_op_case(bilinear_case({2, 2, 5, 6}, 5, 6, 4));    // same size: the identity
  run_op_case(bilinear_case({1, 3, 1, 4}, 3, 9, 5));    // a single input row
  run_op_case(bilinear_case({2, 2, 6, 5}, 8, 3, 6, true));
}

TEST(SegOps, InterpolateBilinearHandComputedValues) {
  // torch.nn.functional.interpolate(torch.tensor([[[[1., 2.], [3., 4.]]]]), (4, 4), mode="bilinear")
  Tensor x = Tensor::from_vector({1, 2, 3, 4}, {1, 1, 2, 2}, DType::f64);
  expect_close(ops::interpolate_bilinear(x, 4, 4).to_vector(),
               {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}, 1e-12, 0, "2->4");
  // Halving averages each 2x2 block (source coordinates 0.5 and 2.5).
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[i] = i;
  Tensor y = ops::interpolate_bilinear(Tensor::from_vector(v, {1, 1, 4, 4}, DType::f32), 2, 2);
  EXPECT_EQ(y.shape(), Shape({1, 1, 2, 2}));
  expect_close(y.to_vector(), {2.5, 4.5, 10.5, 12.5}, 1e-6, 0, "4->2");
}

TEST(SegOps, InterpolateBilinearF32MatchesF64) {
  Tensor x = random_tensor({2, 3, 13, 11}, 7, -3, 3).to(DType::f32).to(DType::f64);
  Tensor dy = random_tensor({2, 3, 32, 5}, 8);
  auto run = [&](DType dt) {
    Tensor xi = x.to(dt).detach().set_requires_grad(true);
    Tensor y = ops::interpolate_bilinear(xi, 32, 5);
    y.backward(dy.to(dt));
    return std::pair{y.to_vector(), xi.grad().to_vector()};
  };
  auto [y64, g64] = run(DType::f64);
  auto [y32, g32] = run(DType::f32);
  expect_close(y32, y64, 1e-5, 1e-5, "forward");
  expect_close(g32, g64, 1e-5, 1e-5, "backward");
}

TEST(SegOps, InterpolateBilinearValidates) {
  EXPECT_THROW(ops::interpolate_bilinear(Tensor::zeros({3, 4, 4}), 2, 2), Error);
  EXPECT_THROW(ops::interpolate_bilinear(Tensor::zeros({1, 1, 4, 4}), 0, 2), Error);
  EXPECT_THROW(ops::interpolate_bilinear(Tensor::zeros({1, 1, 4, 4}, DType::i64), 2, 2), Error);
}

// ---------------------------------------------------------------- pixel_cross_entropy

// Mean over the pixels whose target is not `ignore` of −log_softmax over the channel dim; 0 when none count.
double pixel_ce_ref(const Tensor& logits, const std::vector<double>& target, int64_t ignore) {
  auto v = logits.contiguous().to_vector();
  const int64_t B = logits.size(0), K = logits.size(1), P = logits.size(2) * logits.size(3);
  double total = 0;
  int64_t count = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = 0; p < P; ++p) {
      const auto t = static_cast<int64_t>(target[b * P + p]);
      if (t == ignore) continue;
      double den = 0;
      for (int64_t k = 0; k < K; ++k) den += std::exp(v[(b * K + k) * P + p]);
      total += std::log(den) - v[(b * K + t) * P + p];
      ++count;
    }
  return count > 0 ? total / count : 0.0;
}

// Class maps [B, H, W] with every `every`-th pixel set to `ignore` (none when every = 0).
std::vector<double> seg_targets(int64_t n, int64_t K, int64_t every, int64_t ignore, uint64_t seed) {
  auto u = random_tensor({n}, seed, 0, 1).to_vector();
  std::vector<double> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    t[i] = (every > 0 && i % every == 1) ? static_cast<double>(ignore) : std::floor(u[i] * K);
  return t;
}

OpCase pixel_ce_case(const Shape& shape, int64_t every, int64_t ignore, uint64_t seed) {
  const int64_t B = shape[0], K = shape[1], H = shape[2], W = shape[3];
  auto t = seg_targets(B * H * W, K, every, ignore, seed + 1);
  OpCase c;
  c.name = "pixel_cross_entropy" + to_string(shape) + " ignore every " + std::to_string(every);
  c.inputs = {random_tensor(shape, seed, -3, 3), Tensor::from_vector(t, {B, H, W}, DType::i64)};
  c.fn = [ignore](const std::vector<Tensor>& in) { return ops::pixel_cross_entropy(in[0], in[1], ignore); };
  c.reference = [t, ignore](const std::vector<Tensor>& in) {
    return std::vector<double>{pixel_ce_ref(in[0], t, ignore)};
  };
  return c;
}

TEST(SegOps, PixelCrossEntropyMatchesReferenceAndGradcheck) {
  run_op_case(pixel_ce_case({2, 5, 3, 4}, 0, 255, 10));
  run_op_case(pixel_ce_case({2, 5, 3, 4}, 3, 255, 20));
  run_op_case(pixel_ce_case({1, 7, 5, 3}, 2, -1, 30));   // another ignore label
  run_op_case(pixel_ce_case({3, 1, 2, 2}, 4, 255, 40));  // one class: loss 0 everywhere
}

TEST(SegOps, PixelCrossEntropyEqualsRowCrossEntropy) {
  // With nothing ignored it is cross_entropy over the pixels as rows [B·H·W, K].
  const int64_t B = 2, K = 6, H = 3, W = 5;
  Tensor logits = random_tensor({B, K, H, W}, 50, -4, 4);
  auto t = seg_targets(B * H * W, K, 0, 255, 51);
  Tensor rows = logits.permute({0, 2, 3, 1}).contiguous().reshape({B * H * W, K});
  EXPECT_NEAR(ops::pixel_cross_entropy(logits, Tensor::from_vector(t, {B, H, W}, DType::i64)).item(),
              ops::cross_entropy(rows, Tensor::from_vector(t, {B * H * W}, DType::i64)).item(), 1e-12);
  // A non-contiguous logits view gives the same loss.
  Tensor view = logits.permute({0, 1, 3, 2}).contiguous().permute({0, 1, 3, 2});
  EXPECT_NEAR(ops::pixel_cross_entropy(view, Tensor::from_vector(t, {B, H, W}, DType::i64)).item(),
              pixel_ce_ref(logits, t, 255), 1e-12);
}

TEST(SegOps, PixelCrossEntropyAllIgnoredIsZeroWithZeroGradient) {
  Tensor logits = random_tensor({2, 4, 3, 3}, 60).set_requires_grad(true);
  Tensor target = Tensor::full({2, 3, 3}, 255, DType::i64);
  Tensor loss = ops::pixel_cross_entropy(logits, target);
  EXPECT_EQ(loss.item(), 0.0);
  loss.backward();
  for (double g : logits.grad().to_vector()) ASSERT_EQ(g, 0.0);
}

TEST(SegOps, PixelCrossEntropyIgnoredPixelsGetNoGradientAndF32IsStable) {
  Tensor logits = Tensor::from_vector({1000, 0, 5, 0, 0, 7}, {1, 2, 1, 3}, DType::f32).set_requires_grad(true);
  Tensor target = Tensor::from_vector({1, 255, 0}, {1, 1, 3}, DType::i64);
  Tensor loss = ops::pixel_cross_entropy(logits, target);
  // Pixel 0: logits (1000, 0), target 1: loss 1000; pixel 2: logits (5, 7), target 0: log(e⁵ + e⁷) − 5.
  EXPECT_NEAR(loss.item(), (1000.0 + 2 + std::log1p(std::exp(-2.0))) / 2, 1e-3);
  loss.backward();
  auto g = logits.grad().to_vector();  // [k][p]
  EXPECT_NEAR(g[0], 0.5, 1e-6);        // (softmax 1 − 0) / 2
  EXPECT_NEAR(g[3], -0.5, 1e-6);       // (softmax 0 − 1) / 2
  EXPECT_EQ(g[1], 0.0);
  EXPECT_EQ(g[4], 0.0);
}

TEST(SegOps, PixelCrossEntropyValidatesTargets) {
  Tensor logits = Tensor::zeros({1, 3, 2, 2});
  auto message = [&](const Tensor& t) -> std::string {
    try {
      ops::pixel_cross_entropy(logits, t);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  std::string m = message(Tensor::from_vector({0, 1, 3, 255}, {1, 2, 2}, DType::i64));
  EXPECT_NE(m.find("[pixel_cross_entropy]"), std::string::npos) << m;
  EXPECT_NE(m.find("= 3"), std::string::npos) << m;
  EXPECT_NE(message(Tensor::from_vector({0, 1, 2, 2}, {1, 2, 2}, DType::f32)).find("i64"), std::string::npos);
  EXPECT_NE(message(Tensor::zeros({1, 4}, DType::i64)).find("[pixel_cross_entropy]"), std::string::npos);
  EXPECT_THROW(ops::pixel_cross_entropy(Tensor::zeros({3, 4}), Tensor::zeros({3}, DType::i64)), Error);
}

// ---------------------------------------------------------------- l2_normalize

std::vector<double> l2_normalize_ref(const Tensor& x, double eps) {
  auto v = x.contiguous().to_vector();
  const int64_t C = x.shape().back(), rows = x.numel() / C;
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < C; ++c) ss += v[r * C + c] * v[r * C + c];
    const double d = std::max(std::sqrt(ss), eps);
    for (int64_t c = 0; c < C; ++c) v[r * C + c] /= d;
  }
  return v;
}

OpCase l2_case(const Shape& shape, double eps, uint64_t seed, double lo = -2, double hi = 2) {
  OpCase c;
  c.name = "l2_normalize" + to_string(shape) + " eps " + std::to_string(eps);
  c.inputs = {random_tensor(shape, seed, lo, hi)};
  c.fn = [eps](const std::vector<Tensor>& in) { return ops::l2_normalize(in[0], eps); };
  c.reference = [eps](const std::vector<Tensor>& in) { return l2_normalize_ref(in[0], eps); };
  return c;
}

TEST(SegOps, L2NormalizeMatchesReferenceAndGradcheck) {
  run_op_case(l2_case({7, 5}, 1e-12, 70));
  run_op_case(l2_case({2, 3, 100}, 1e-12, 71));
  run_op_case(l2_case({4}, 1e-12, 72));
  run_op_case(l2_case({3, 4}, 10.0, 73, -1, 1));  // every norm below eps: x / eps
}

TEST(SegOps, L2NormalizeZeroRowAndF32) {
  Tensor x = Tensor::from_vector({0, 0, 0, 3, 4, 0}, {2, 3}, DType::f32).set_requires_grad(true);
  Tensor y = ops::l2_normalize(x);
  expect_close(y.to_vector(), {0, 0, 0, 0.6, 0.8, 0}, 1e-7, 0, "forward");
  y.backward(Tensor::from_vector({1, 1, 1, 1, 0, 0}, {2, 3}, DType::f32));
  auto g = x.grad().to_vector();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isfinite(g[i])) << i;  // g / eps: large but finite in f32
  // Row 1: (g − y (y·g)) / 5 with y·g = 0.6.
  expect_close({g[3], g[4], g[5]}, {(1 - 0.36) / 5, -0.48 / 5, 0}, 1e-7, 0, "row 1");
  Tensor z = random_tensor({9, 37}, 74).to(DType::f32).to(DType::f64);
  expect_close(ops::l2_normalize(z.to(DType::f32)).to_vector(), l2_normalize_ref(z, 1e-12), 1e-6, 0, "f32");
}

}  // namespace
}  // namespace vt::test
