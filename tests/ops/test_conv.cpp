// Patch conv, depth-wise 3×3 conv and adaptive average pooling: forward against direct f64 loops written here,
// PyTorch's bin boundaries from hand-computed lists, gradients by finite differences, and the error cases.
#include <cmath>

#include "kernels/cpu/pool.h"
#include "ops/op_harness.h"

namespace vt::test {
namespace {

bool throws_with(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    if (std::string(e.what()).find(needle) != std::string::npos) return true;
    ADD_FAILURE() << "error lacks '" << needle << "': " << e.what();
    return false;
  }
  ADD_FAILURE() << "expected an error containing '" << needle << "'";
  return false;
}

// Direct convolution with stride == kernel == p; bias optional (empty vector = none).
std::vector<double> patch_conv_reference(const Tensor& x, const Tensor& w, const std::vector<double>& bias) {
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), D = w.size(0), p = w.size(2);
  const int64_t Gh = H / p, Gw = W / p;
  auto xv = x.to_vector(), wv = w.to_vector();
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t gy = 0; gy < Gh; ++gy)
        for (int64_t gx = 0; gx < Gw; ++gx) {
          double acc = bias.empty() ? 0.0 : bias[d];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < p; ++ky)
              for (int64_t kx = 0; kx < p; ++kx)
                acc += xv[((b * C + c) * H + gy * p + ky) * W + gx * p + kx] * wv[((d * C + c) * p + ky) * p + kx];
          out.push_back(acc);
        }
  return out;
}

TEST(Conv, PatchConvMatchesDirectLoopAndGradcheck) {
  OpCase c;
  c.name = "conv2d_patch B2 C3 6x6 p3 D5";
  c.inputs = {random_tensor({2, 3, 6, 6}, 31), random_tensor({5, 3, 3, 3}, 32), random_tensor({5}, 33)};
  c.fn = [](const std::vector<Tensor>& in) { return ops::conv2d_patch(in[0], in[1], in[2]); };
  c.reference = [](const std::vector<Tensor>& in) { return patch_conv_reference(in[0], in[1], in[2].to_vector()); };
  run_op_case(c);
  EXPECT_EQ(ops::conv2d_patch(c.inputs[0], c.inputs[1], c.inputs[2]).shape(), Shape({2, 5, 2, 2}));

  // Non-square grid (2×3 patches of 2×2), no bias: catches a swapped Gh/Gw or a transposed output.
  OpCase r;
  r.name = "conv2d_patch B1 C2 4x6 p2 D3 no bias";
  r.inputs = {random_tensor({1, 2, 4, 6}, 34), random_tensor({3, 2, 2, 2}, 35)};
  r.fn = [](const std::vector<Tensor>& in) { return ops::conv2d_patch(in[0], in[1], Tensor()); };
  r.reference = [](const std::vector<Tensor>& in) { return patch_conv_reference(in[0], in[1], {}); };
  run_op_case(r);
}

TEST(Conv, PatchConvFloat32MatchesFloat64) {
  Tensor x = random_tensor({2, 3, 14, 7}, 36), w = random_tensor({11, 3, 7, 7}, 37), b = random_tensor({11}, 38);
  auto expected = patch_conv_reference(x, w, b.to_vector());
  auto got = ops::conv2d_patch(x.to(DType::f32), w.to(DType::f32), b.to(DType::f32)).to_vector();
  expect_close(got, expected, 1e-4, 1e-4, "conv2d_patch f32");
}

TEST(Conv, PatchConvInputGradWithFrozenWeight) {
  Tensor x = random_tensor({2, 3, 6, 9}, 39), w = random_tensor({4, 3, 3, 3}, 40), g = random_tensor({2, 4, 2, 3}, 41);
  Tensor x1 = x.clone().set_requires_grad(true), w1 = w.clone().set_requires_grad(true);
  ops::conv2d_patch(x1, w1, Tensor()).backward(g);
  Tensor x2 = x.clone().set_requires_grad(true);
  Tensor y2 = ops::conv2d_patch(x2, w, Tensor());
  y2.backward(g);
  expect_close(x2.grad().to_vector(), x1.grad().to_vector(), 1e-12, 0, "dx with frozen weight");
}

TEST(Conv, PatchConvRejectsBadShapes) {
  Tensor w = Tensor::zeros({5, 3, 3, 3}, DType::f64);
  throws_with([&] { ops::conv2d_patch(Tensor::zeros({1, 3, 7, 6}, DType::f64), w, Tensor()); }, "[conv2d_patch]");
  throws_with([&] { ops::conv2d_patch(Tensor::zeros({1, 3, 6, 8}, DType::f64), w, Tensor()); }, "[conv2d_patch]");
  throws_with([&] { ops::conv2d_patch(Tensor::zeros({1, 4, 6, 6}, DType::f64), w, Tensor()); }, "channels");
  throws_with(
      [&] {
        ops::conv2d_patch(Tensor::zeros({1, 3, 6, 6}, DType::f64), w, Tensor::zeros({4}, DType::f64));
      },
      "bias");
  throws_with([&] { ops::conv2d_patch(Tensor::zeros({1, 3, 6, 6}), w, Tensor()); }, "dtypes differ");
}

// The K×K depth-wise conv (padding K/2) as the plain loop, K from w [C, 1, K, K].
std::vector<double> depthwise_reference(const Tensor& x, const Tensor& w, const std::vector<double>& bias) {
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), K = w.size(2), r = K / 2;
  auto xv = x.to_vector(), wv = w.to_vector();
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t i = 0; i < W; ++i) {
          double acc = bias.empty() ? 0.0 : bias[c];
          for (int64_t ky = 0; ky < K; ++ky)
            for (int64_t kx = 0; kx < K; ++kx) {
              const int64_t yy = y + ky - r, xx = i + kx - r;
              if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;  // zero padding
              acc += xv[((b * C + c) * H + yy) * W + xx] * wv[(c * K + ky) * K + kx];
            }
          out.push_back(acc);
        }
  return out;
}

TEST(Conv, DepthwiseMatchesDirectLoopAndGradcheck) {
  OpCase c;
  c.name = "depthwise_conv2d 3x3 2x3x5x7";
  c.inputs = {random_tensor({2, 3, 5, 7}, 41), random_tensor({3, 1, 3, 3}, 42), random_tensor({3}, 43)};
  c.fn = [](const std::vector<Tensor>& in) { return ops::depthwise_conv2d(in[0], in[1], in[2]); };
  c.reference = [](const std::vector<Tensor>& in) { return depthwise_reference(in[0], in[1], in[2].to_vector()); };
  run_op_case(c);

  OpCase r;  // 1-pixel-wide image: every tap but the centre column falls in the padding
  r.name = "depthwise_conv2d 3x3 1x2x4x1 no bias";
  r.inputs = {random_tensor({1, 2, 4, 1}, 44), random_tensor({2, 1, 3, 3}, 45)};
  r.fn = [](const std::vector<Tensor>& in) { return ops::depthwise_conv2d(in[0], in[1], Tensor()); };
  r.reference = [](const std::vector<Tensor>& in) { return depthwise_reference(in[0], in[1], {}); };
  run_op_case(r);

  OpCase f;  // 5×5 (BRA's LCE): a 4-row image leaves some taps outside on both sides at once
  f.name = "depthwise_conv2d 5x5 2x3x4x6";
  f.inputs = {random_tensor({2, 3, 4, 6}, 50), random_tensor({3, 1, 5, 5}, 51), random_tensor({3}, 52)};
  f.fn = [](const std::vector<Tensor>& in) { return ops::depthwise_conv2d(in[0], in[1], in[2]); };
  f.reference = [](const std::vector<Tensor>& in) { return depthwise_reference(in[0], in[1], in[2].to_vector()); };
  run_op_case(f);
}

// Large enough for the OpenMP paths: f32 forward against the f64 loop, f32 gradients against f64 gradients.
TEST(Conv, DepthwiseFloat32LargeMatchesFloat64) {
  for (int64_t K : {3, 5}) {
    const std::string what = std::to_string(K) + "x" + std::to_string(K);
    Tensor x = random_tensor({2, 8, 35, 37}, 46), w = random_tensor({8, 1, K, K}, 47), b = random_tensor({8}, 48);
    expect_close(ops::depthwise_conv2d(x.to(DType::f32), w.to(DType::f32), b.to(DType::f32)).to_vector(),
                 depthwise_reference(x, w, b.to_vector()), 1e-5, 1e-5, "forward f32 " + what);
    Tensor g = random_tensor(x.shape(), 49);
    std::vector<std::vector<double>> grads[2];
    for (DType dt : {DType::f64, DType::f32}) {
      Tensor xi = x.detach().to(dt).set_requires_grad(true), wi = w.detach().to(dt).set_requires_grad(true),
             bi = b.detach().to(dt).set_requires_grad(true);
      ops::depthwise_conv2d(xi, wi, bi).backward(g.to(dt));
      grads[dt == DType::f32] = {xi.grad().to_vector(), wi.grad().to_vector(), bi.grad().to_vector()};
    }
    for (int i = 0; i < 3; ++i)
      expect_close(grads[1][i], grads[0][i], 1e-3, 1e-4, "grad " + std::to_string(i) + " " + what);
  }
}

TEST(Conv, DepthwiseRejectsBadWeight) {
  Tensor x = Tensor::zeros({1, 3, 4, 4}, DType::f64);
  throws_with(
      [&] {
        ops::depthwise_conv2d(x, Tensor::zeros({4, 1, 3, 3}, DType::f64), Tensor());
      },
      "[depthwise_conv2d]");
  throws_with([&] { ops::depthwise_conv2d(x, Tensor::zeros({3, 1, 4, 4}, DType::f64), Tensor()); }, "K odd");
  throws_with(
      [&] {
        ops::depthwise_conv2d(x, Tensor::zeros({3, 1, 3, 5}, DType::f64), Tensor());
      },
      "[depthwise_conv2d]");
  throws_with(
      [&] {
        ops::depthwise_conv2d(x.reshape({3, 4, 4}), Tensor::zeros({3, 1, 3, 3}, DType::f64), Tensor());
      },
      "[depthwise_conv2d]");
}

struct Bins {
  int64_t in, out;
  std::vector<int64_t> starts, ends;
};

// Hand-computed from start_i = floor(i·in/out), end_i = ceil((i+1)·in/out):
//  14→5: i·14/5     = 0, 2.8, 5.6, 8.4, 11.2  → starts 0 2 5 8 11
//        (i+1)·14/5 = 2.8, 5.6, 8.4, 11.2, 14 → ends 3 6 9 12 14
//  32→7: i·32/7   = 0, 4.57, 9.14, 13.71, 18.29, 22.86, 27.43 → starts 0 4 9 13 18 22 27
//        (i+1)·32/7 = 4.57, 9.14, 13.71, 18.29, 22.86, 27.43, 32 → ends 5 10 14 19 23 28 32
//  40→7: i·40/7   = 0, 5.71, 11.43, 17.14, 22.86, 28.57, 34.29 → starts 0 5 11 17 22 28 34
//        (i+1)·40/7 = 5.71, 11.43, 17.14, 22.86, 28.57, 34.29, 40 → ends 6 12 18 23 29 35 40
const std::vector<Bins> kBins = {
    {14, 5, {0, 2, 5, 8, 11}, {3, 6, 9, 12, 14}},
    {32, 7, {0, 4, 9, 13, 18, 22, 27}, {5, 10, 14, 19, 23, 28, 32}},
    {40, 7, {0, 5, 11, 17, 22, 28, 34}, {6, 12, 18, 23, 29, 35, 40}},
};

TEST(Pool, AdaptiveBinsMatchPyTorch) {
  for (const auto& b : kBins) {
    SCOPED_TRACE(std::to_string(b.in) + "->" + std::to_string(b.out));
    for (int64_t i = 0; i < b.out; ++i) {
      EXPECT_EQ(kernels::cpu::adaptive_bin_start(i, b.in, b.out), b.starts[i]) << "bin " << i;
      EXPECT_EQ(kernels::cpu::adaptive_bin_end(i, b.in, b.out), b.ends[i]) << "bin " << i;
    }
    // The op itself: each output is the mean of its listed bin.
    Tensor x = random_tensor({2, b.in}, 50 + b.in);
    auto xv = x.to_vector();
    std::vector<double> expected;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t i = 0; i < b.out; ++i) {
        double s = 0;
        for (int64_t k = b.starts[i]; k < b.ends[i]; ++k) s += xv[r * b.in + k];
        expected.push_back(s / static_cast<double>(b.ends[i] - b.starts[i]));
      }
    expect_close(ops::adaptive_avg_pool1d(x, b.out).to_vector(), expected, 1e-12, 0, "pool1d");
    // Same bins along H and along W of the 2-D op.
    auto along_h = ops::adaptive_avg_pool2d(x.reshape({2, b.in, 1}), b.out, 1).to_vector();
    auto along_w = ops::adaptive_avg_pool2d(x.reshape({2, 1, b.in}), 1, b.out).to_vector();
    expect_close(along_h, expected, 1e-12, 0, "pool2d along H");
    expect_close(along_w, expected, 1e-12, 0, "pool2d along W");
  }
}

// Direct loop with the bin rule evaluated in floating point, independent of the integer formula in the kernel.
std::vector<double> pool2d_reference(const Tensor& x, int64_t oh, int64_t ow) {
  const int64_t H = x.size(-2), W = x.size(-1), N = x.numel() / (H * W);
  auto xv = x.to_vector();
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const auto y0 = static_cast<int64_t>(std::floor(double(i) * H / oh));
        const auto y1 = static_cast<int64_t>(std::ceil(double(i + 1) * H / oh));
        const auto x0 = static_cast<int64_t>(std::floor(double(j) * W / ow));
        const auto x1 = static_cast<int64_t>(std::ceil(double(j + 1) * W / ow));
        double s = 0;
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t k = x0; k < x1; ++k) s += xv[(n * H + y) * W + k];
        out.push_back(s / static_cast<double>((y1 - y0) * (x1 - x0)));
      }
  return out;
}

TEST(Pool, AdaptiveAvgPoolMatchesDirectLoopAndGradcheck) {
  struct Case {
    Shape shape;
    int64_t oh, ow;
  };
  // Overlapping bins (14→5, 9→4), exact division (6→3), and upsampling (3→5).
  for (const auto& k : std::vector<Case>{{{2, 3, 14, 9}, 5, 4}, {{3, 6, 3}, 3, 5}, {{7, 7}, 1, 1}}) {
    OpCase c;
    c.name = "adaptive_avg_pool2d " + to_string(k.shape) + " -> " + std::to_string(k.oh) + "x" + std::to_string(k.ow);
    c.inputs = {random_tensor(k.shape, 61)};
    c.fn = [k](const std::vector<Tensor>& in) { return ops::adaptive_avg_pool2d(in[0], k.oh, k.ow); };
    c.reference = [k](const std::vector<Tensor>& in) { return pool2d_reference(in[0], k.oh, k.ow); };
    run_op_case(c);
  }
  OpCase c;
  c.name = "adaptive_avg_pool1d [2, 3, 40] -> 7";
  c.inputs = {random_tensor({2, 3, 40}, 62)};
  c.fn = [](const std::vector<Tensor>& in) { return ops::adaptive_avg_pool1d(in[0], 7); };
  c.reference = [](const std::vector<Tensor>& in) { return pool2d_reference(in[0].reshape({6, 1, 40}), 1, 7); };
  run_op_case(c);
  EXPECT_EQ(ops::adaptive_avg_pool1d(c.inputs[0], 7).shape(), Shape({2, 3, 7}));
}

TEST(Pool, AdaptiveAvgPoolFloat32LargeMatchesFloat64) {
  Tensor x = random_tensor({4, 64, 33, 31}, 63);
  expect_close(ops::adaptive_avg_pool2d(x.to(DType::f32), 7, 5).to_vector(), pool2d_reference(x, 7, 5), 1e-5, 1e-5,
               "forward f32");
  Tensor g = random_tensor({4, 64, 7, 5}, 64);
  std::vector<double> grads[2];
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor xi = x.detach().to(dt).set_requires_grad(true);
    ops::adaptive_avg_pool2d(xi, 7, 5).backward(g.to(dt));
    grads[dt == DType::f32] = xi.grad().to_vector();
  }
  expect_close(grads[1], grads[0], 1e-6, 1e-5, "grad f32");
}

TEST(Pool, AdaptiveAvgPoolRejectsBadSizes) {
  throws_with([] { ops::adaptive_avg_pool2d(Tensor::zeros({4}, DType::f64), 1, 1); }, "[adaptive_avg_pool2d]");
  throws_with([] { ops::adaptive_avg_pool2d(Tensor::zeros({4, 4}, DType::f64), 0, 1); }, "[adaptive_avg_pool2d]");
  throws_with([] { ops::adaptive_avg_pool1d(Tensor::zeros({2, 0}, DType::f64), 1); }, "[adaptive_avg_pool1d]");
}

}  // namespace
}  // namespace vt::test
