// Fused NN ops: softmax/log_softmax, layer_norm and the cross-entropy losses against plain f64 loops,
// gradients by finite differences, f32 stability, and validation errors.
#include <array>
#include <cmath>
#include <optional>

#include "ops/op_harness.h"

namespace vt::test {
namespace {

// Softmax along `dim` of a row-major tensor, by loops over (outer, R, inner).
std::vector<double> softmax_ref(const Tensor& x, int64_t dim, bool log) {
  auto v = x.to_vector();
  const Shape& s = x.shape();
  dim = dim < 0 ? dim + x.dim() : dim;
  int64_t outer = 1, R = s[dim], inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  for (int64_t i = dim + 1; i < x.dim(); ++i) inner *= s[i];
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t r) { return (o * R + r) * inner + j; };
      double den = 0;
      for (int64_t r = 0; r < R; ++r) den += std::exp(v[at(r)]);
      for (int64_t r = 0; r < R; ++r) out[at(r)] = log ? v[at(r)] - std::log(den) : std::exp(v[at(r)]) / den;
    }
  return out;
}

OpCase softmax_case(bool log, const Shape& shape, int64_t dim, uint64_t seed) {
  OpCase c;
  c.name = std::string(log ? "log_softmax" : "softmax") + to_string(shape) + " dim " + std::to_string(dim);
  c.inputs = {random_tensor(shape, seed, -3, 3)};
  c.fn = [log, dim](const std::vector<Tensor>& in) {
    return log ? ops::log_softmax(in[0], dim) : ops::softmax(in[0], dim);
  };
  c.reference = [log, dim](const std::vector<Tensor>& in) { return softmax_ref(in[0], dim, log); };
  return c;
}

TEST(NnFunctional, SoftmaxAndLogSoftmaxMatchReferenceAndGradcheck) {
  for (bool log : {false, true}) {
    run_op_case(softmax_case(log, {7, 5}, -1, 1));
    run_op_case(softmax_case(log, {7, 5}, 0, 2));
    run_op_case(softmax_case(log, {3, 197}, -1, 3));
    run_op_case(softmax_case(log, {3, 197}, 0, 4));
    run_op_case(softmax_case(log, {2, 3, 7}, 1, 5));  // a middle dim: strided path with outer and inner > 1
  }
}

TEST(NnFunctional, SoftmaxF32IsStableForLargeLogits) {
  Tensor x = Tensor::from_vector({1000, 1001, 1002, -1000, 0, 1000}, {2, 3}, DType::f32);
  auto y = ops::softmax(x, -1).to_vector();
  auto ly = ops::log_softmax(x, -1).to_vector();
  // Row 0 is softmax([0, 1, 2]); row 1 is [0, 0, 1] up to exp(-1000).
  auto ref = softmax_ref(Tensor::from_vector({0, 1, 2, -2000, -1000, 0}, {2, 3}, DType::f64), -1, false);
  auto lref = softmax_ref(Tensor::from_vector({0, 1, 2, -2000, -1000, 0}, {2, 3}, DType::f64), -1, true);
  expect_close(y, ref, 1e-6, 1e-5, "softmax f32");
  expect_close(ly, lref, 1e-4, 1e-6, "log_softmax f32");
  // The strided path too (softmax over dim 0 of the transpose).
  expect_close(ops::softmax(x.transpose(0, 1).contiguous(), 0).transpose(0, 1).contiguous().to_vector(), ref, 1e-6,
               1e-5, "softmax f32 dim 0");
}

TEST(NnFunctional, SoftmaxF32MatchesF64AcrossTheExpRange) {
  // The f32 kernels use their own vectorised exp; check forward and backward over a wide input range.
  for (int64_t dim : {int64_t{-1}, int64_t{0}}) {
    Tensor x = random_tensor({37, 197}, 6, -40, 40).to(DType::f32).to(DType::f64);  // exactly representable in f32
    Tensor dy = random_tensor({37, 197}, 7);
    for (bool log : {false, true}) {
      SCOPED_TRACE(std::string(log ? "log_softmax" : "softmax") + " dim " + std::to_string(dim));
      auto run = [&](DType dt) {
        Tensor xi = x.to(dt).detach().set_requires_grad(true);
        Tensor y = log ? ops::log_softmax(xi, dim) : ops::softmax(xi, dim);
        y.backward(dy.to(dt));
        return std::pair{y.to_vector(), xi.grad().to_vector()};
      };
      auto [y64, g64] = run(DType::f64);
      auto [y32, g32] = run(DType::f32);
      expect_close(y32, y64, log ? 1e-4 : 1e-12, log ? 1e-6 : 2e-6, "forward");
      expect_close(g32, g64, 1e-6, 1e-4, "backward");
    }
  }
}

// ---------------------------------------------------------------- layer_norm

std::vector<double> layer_norm_ref(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  auto v = x.to_vector();
  const int64_t C = x.shape().back(), rows = x.numel() / C;
  std::vector<double> wv = w.defined() ? w.to_vector() : std::vector<double>(C, 1.0);
  std::vector<double> bv = b.defined() ? b.to_vector() : std::vector<double>(C, 0.0);
  std::vector<double> out(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) m += v[r * C + c] / C;
    for (int64_t c = 0; c < C; ++c) var += (v[r * C + c] - m) * (v[r * C + c] - m) / C;
    for (int64_t c = 0; c < C; ++c) out[r * C + c] = (v[r * C + c] - m) / std::sqrt(var + eps) * wv[c] + bv[c];
  }
  return out;
}

OpCase layer_norm_case(const Shape& shape, bool weight, bool bias, uint64_t seed) {
  const int64_t C = shape.back();
  OpCase c;
  c.name = "layer_norm" + to_string(shape) + (weight ? " w" : "") + (bias ? " b" : "");
  // The harness needs defined inputs, so absent weight/bias are left out of the list and rebuilt here.
  c.inputs = {random_tensor(shape, seed, -2, 2)};
  if (weight) c.inputs.push_back(random_tensor({C}, seed + 1, 0.5, 1.5));
  if (bias) c.inputs.push_back(random_tensor({C}, seed + 2, -1, 1));
  auto unpack = [weight, bias](const std::vector<Tensor>& in) {
    return std::array<Tensor, 3>{in[0], weight ? in[1] : Tensor(), bias ? in[weight ? 2 : 1] : Tensor()};
  };
  c.fn = [unpack](const std::vector<Tensor>& in) {
    auto a = unpack(in);
    return ops::layer_norm(a[0], a[1], a[2], 1e-5);
  };
  c.reference = [unpack](const std::vector<Tensor>& in) {
    auto a = unpack(in);
    return layer_norm_ref(a[0], a[1], a[2], 1e-5);
  };
  return c;
}

TEST(NnFunctional, LayerNormMatchesReferenceAndGradcheck) {
  run_op_case(layer_norm_case({7, 5}, true, true, 10));
  run_op_case(layer_norm_case({7, 5}, false, false, 20));
  run_op_case(layer_norm_case({7, 5}, true, false, 30));
  run_op_case(layer_norm_case({7, 5}, false, true, 40));
  run_op_case(layer_norm_case({3, 2, 197}, true, true, 50));
}

TEST(NnFunctional, LayerNormF32StatisticsSurviveALargeMean) {
  // Naive E[x²] − E[x]² in f32 loses every digit here; the kernel must not.
  std::vector<double> v = random_tensor({4, 96}, 60, -1, 1).to_vector();
  for (auto& e : v) e += 1e4;
  Tensor x32 = Tensor::from_vector(v, {4, 96}, DType::f32);
  auto y = ops::layer_norm(x32, Tensor(), Tensor(), 1e-5).to_vector();
  expect_close(y, layer_norm_ref(x32.to(DType::f64), Tensor(), Tensor(), 1e-5), 2e-3, 0, "layer_norm f32");
}

TEST(NnFunctional, LayerNormParallelWeightGradMatchesSerialChunks) {
  // 200 x 97 runs the threaded backward; 20-row chunks run serially. dw/db must agree.
  const int64_t rows = 200, C = 97;
  Tensor x = random_tensor({rows, C}, 70, -2, 2), dy = random_tensor({rows, C}, 71, -1, 1);
  Tensor w = random_tensor({C}, 72, 0.5, 1.5).set_requires_grad(true);
  Tensor b = random_tensor({C}, 73, -1, 1).set_requires_grad(true);
  Tensor xg = x.clone().set_requires_grad(true);
  ops::layer_norm(xg, w, b, 1e-5).backward(dy);
  std::vector<double> dw(C, 0.0), db(C, 0.0), dx;
  for (int64_t r0 = 0; r0 < rows; r0 += 20) {
    Tensor xs = x.slice(0, r0, r0 + 20).contiguous().set_requires_grad(true);
    Tensor ws = w.detach().clone().set_requires_grad(true), bs = b.detach().clone().set_requires_grad(true);
    ops::layer_norm(xs, ws, bs, 1e-5).backward(dy.slice(0, r0, r0 + 20).contiguous());
    auto gw = ws.grad().to_vector(), gb = bs.grad().to_vector(), gx = xs.grad().to_vector();
    for (int64_t c = 0; c < C; ++c) dw[c] += gw[c], db[c] += gb[c];
    dx.insert(dx.end(), gx.begin(), gx.end());
  }
  expect_close(w.grad().to_vector(), dw, 1e-10, 1e-10, "dw");
  expect_close(b.grad().to_vector(), db, 1e-10, 1e-10, "db");
  expect_close(xg.grad().to_vector(), dx, 1e-12, 1e-10, "dx");
}

TEST(NnFunctional, LayerNormOutDtypeCastsOnlyTheOutput) {
  // On the CPU out_dtype is layer_norm in x's dtype followed by a cast: the same values (rounded once) and, with
  // a gradient of out_dtype, the same f32 gradients as the plain op given that gradient in f32.
  Tensor x = random_tensor({5, 33}, 100, -2, 2).to(DType::f32);
  Tensor w = random_tensor({33}, 101, 0.5, 1.5).to(DType::f32), b = random_tensor({33}, 102, -1, 1).to(DType::f32);
  Tensor dy = random_tensor({5, 33}, 103).to(DType::bf16);
  auto run = [&](std::optional<DType> out, const Tensor& g) {
    Tensor xi = x.clone().set_requires_grad(true), wi = w.clone().set_requires_grad(true);
    Tensor bi = b.clone().set_requires_grad(true);
    Tensor y = ops::layer_norm(xi, wi, bi, 1e-5, out);
    y.backward(g);
    return std::array<Tensor, 4>{y, xi.grad(), wi.grad(), bi.grad()};
  };
  auto cast = run(DType::bf16, dy);
  auto plain = run(std::nullopt, dy.to(DType::f32));
  EXPECT_EQ(cast[0].dtype(), DType::bf16);
  EXPECT_EQ(cast[0].to_vector(), plain[0].to(DType::bf16).to_vector());
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(cast[i].dtype(), DType::f32) << i;
    EXPECT_EQ(cast[i].to_vector(), plain[i].to_vector()) << i;
  }
  EXPECT_EQ(ops::layer_norm(x, w, b, 1e-5, DType::f32).to_vector(), plain[0].to_vector());
}

// h + gelu(layer_norm(h)) with h = 1.5·x: the add's gradient for h is pending when LayerNorm's backward runs, so
// LayerNorm folds it into dx (Node::can_fold_pending). `split` gives the residual and the norm separate leaves,
// so nothing can fold, and sums their gradients.
Tensor residual_ln_grad(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& dz, bool split) {
  Tensor x1 = x.clone().set_requires_grad(true), x2 = split ? x.clone().set_requires_grad(true) : x1;
  Tensor h1 = x1 * 1.5, h2 = split ? x2 * 1.5 : h1;
  Tensor z = h1 + ops::gelu(ops::layer_norm(h2, w, b, 1e-5));
  z.backward(dz);
  return split ? x1.grad() + x2.grad() : x1.grad();
}

TEST(NnFunctional, LayerNormFoldedResidualGradientMatchesTheSeparateSum) {
  for (DType dt : {DType::f64, DType::f32}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random_tensor({9, 37}, 110, -2, 2, dt), dz = random_tensor({9, 37}, 111, -1, 1, dt);
    Tensor w = random_tensor({37}, 112, 0.5, 1.5, dt), b = random_tensor({37}, 113, -1, 1, dt);
    Tensor folded = residual_ln_grad(x, w, b, dz, false), split = residual_ln_grad(x, w, b, dz, true);
    EXPECT_EQ(folded.dtype(), dt);
    // The same terms added in another order: a few ulp of the gradient's scale.
    const double tol = dt == DType::f64 ? 1e-13 : 1e-5;
    expect_close(folded.to_vector(), split.to_vector(), tol, tol, "dx");
  }
}

TEST(NnFunctional, LayerNormFoldedResidualGradientPassesGradcheck) {
  // Pre-norm blocks through the engine: x1 = x + gelu(LN1(x)), x2 = x1 + LN2(x1)·s, x2 + LN3(x2). x1 and x2 are
  // not leaves, so LN2 and LN3 fold; the add passes one gradient tensor to both of its inputs, so the folding
  // backward must leave the pending tensor untouched.
  OpCase c;
  c.name = "pre-norm residual blocks";
  c.inputs = {random_tensor({5, 11}, 120, -2, 2), random_tensor({11}, 121, 0.5, 1.5), random_tensor({11}, 122),
              random_tensor({5, 11}, 123)};
  c.fn = [](const std::vector<Tensor>& a) {
    Tensor x1 = a[0] + ops::gelu(ops::layer_norm(a[0], a[1], a[2], 1e-5));
    Tensor x2 = x1 + ops::layer_norm(x1, a[1], Tensor(), 1e-5) * a[3];
    return x2 + ops::layer_norm(x2, Tensor(), Tensor(), 1e-5);
  };
  run_op_case(c);
}

TEST(NnFunctional, AddLayerNormIsTheAddThenTheNormWithBothGradients) {
  // Both results feed the loss (the sum is the residual stream, the norm the next branch's input).
  OpCase c;
  c.name = "add_layer_norm";
  c.inputs = {random_tensor({4, 13}, 130, -2, 2), random_tensor({4, 13}, 131, -2, 2),
              random_tensor({13}, 132, 0.5, 1.5), random_tensor({13}, 133), random_tensor({4, 13}, 134)};
  c.fn = [](const std::vector<Tensor>& a) {
    const auto [h, n] = ops::add_layer_norm(a[0], a[1], a[2], a[3], 1e-5);
    return h * a[4] + ops::gelu(n);
  };
  run_op_case(c);
  const auto [h, n] = ops::add_layer_norm(c.inputs[0], c.inputs[1], c.inputs[2], c.inputs[3], 1e-5);
  expect_close(h.to_vector(), (c.inputs[0] + c.inputs[1]).to_vector(), 0, 0, "sum");
  expect_close(n.to_vector(), ops::layer_norm(h, c.inputs[2], c.inputs[3], 1e-5).to_vector(), 0, 0, "norm");
}

TEST(NnFunctional, LayerNormRejectsMismatchedWeight) {
  EXPECT_THROW(ops::layer_norm(Tensor::zeros({3, 5}), Tensor::ones({4}), Tensor(), 1e-5), Error);
  EXPECT_THROW(ops::layer_norm(Tensor::zeros({3, 5}), Tensor::ones({5}, DType::f64), Tensor(), 1e-5), Error);
}

// ---------------------------------------------------------------- losses

// Mean over rows of −Σ_c q_c·log p_c, with q = (1−s)·onehot + s/C (or the given soft targets).
double cross_entropy_ref(const Tensor& logits, const std::vector<std::vector<double>>& q) {
  auto v = logits.to_vector();
  const int64_t B = logits.shape()[0], C = logits.shape()[1];
  double total = 0;
  for (int64_t b = 0; b < B; ++b) {
    double den = 0;
    for (int64_t c = 0; c < C; ++c) den += std::exp(v[b * C + c]);
    for (int64_t c = 0; c < C; ++c) total -= q[b][c] * (v[b * C + c] - std::log(den));
  }
  return total / B;
}

std::vector<std::vector<double>> smoothed_targets(const std::vector<double>& t, int64_t C, double s) {
  std::vector<std::vector<double>> q;
  for (double k : t) {
    q.emplace_back(C, s / C);
    q.back()[static_cast<size_t>(k)] += 1 - s;
  }
  return q;
}

TEST(NnFunctional, CrossEntropyHandComputedValue) {
  // −log softmax([1, 2, 3])[2] = log(e + e² + e³) − 3
  Tensor logits = Tensor::from_vector({1, 2, 3}, {1, 3}, DType::f64);
  Tensor target = Tensor::from_vector({2}, {1}, DType::i64);
  EXPECT_NEAR(ops::cross_entropy(logits, target).item(), 0.40760596444, 1e-10);
  EXPECT_NEAR(ops::cross_entropy(logits.to(DType::f32), target).item(), 0.40760596444, 1e-6);
}

TEST(NnFunctional, CrossEntropyMatchesReferenceAndGradcheck) {
  const int64_t B = 7, C = 5;
  std::vector<double> t = {0, 4, 2, 2, 1, 3, 4};
  for (double s : {0.0, 0.1}) {
    OpCase c;
    c.name = "cross_entropy s=" + std::to_string(s);
    c.inputs = {random_tensor({B, C}, 80, -3, 3), Tensor::from_vector(t, {B}, DType::i64)};
    c.fn = [s](const std::vector<Tensor>& in) { return ops::cross_entropy(in[0], in[1], s); };
    c.reference = [s, t, C](const std::vector<Tensor>& in) {
      return std::vector<double>{cross_entropy_ref(in[0], smoothed_targets(t, C, s))};
    };
    run_op_case(c);
  }
}

Tensor soft_targets(int64_t B, int64_t C, uint64_t seed) {
  auto v = random_tensor({B, C}, seed, 0.1, 1).to_vector();
  for (int64_t b = 0; b < B; ++b) {
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += v[b * C + c];
    for (int64_t c = 0; c < C; ++c) v[b * C + c] /= s;
  }
  return Tensor::from_vector(v, {B, C}, DType::f64);
}

TEST(NnFunctional, SoftTargetCrossEntropyMatchesReferenceAndGradcheck) {
  OpCase c;
  c.name = "soft_target_cross_entropy";
  c.inputs = {random_tensor({7, 5}, 90, -3, 3), soft_targets(7, 5, 91)};
  c.fn = [](const std::vector<Tensor>& in) { return ops::soft_target_cross_entropy(in[0], in[1]); };
  c.reference = [](const std::vector<Tensor>& in) {
    auto tv = in[1].to_vector();
    std::vector<std::vector<double>> q(7);
    for (int64_t b = 0; b < 7; ++b) q[b].assign(tv.begin() + b * 5, tv.begin() + (b + 1) * 5);
    return std::vector<double>{cross_entropy_ref(in[0], q)};
  };
  run_op_case(c);  // checks both the logits and the target gradient
}

TEST(NnFunctional, SmoothedCrossEntropyEqualsSoftTargetsAndF32IsStable) {
  Tensor logits = random_tensor({6, 197}, 95, -5, 5);
  std::vector<double> t = {0, 196, 5, 100, 7, 42};
  std::vector<double> qv;
  for (auto& row : smoothed_targets(t, 197, 0.1)) qv.insert(qv.end(), row.begin(), row.end());
  EXPECT_NEAR(ops::cross_entropy(logits, Tensor::from_vector(t, {6}, DType::i64), 0.1).item(),
              ops::soft_target_cross_entropy(logits, Tensor::from_vector(qv, {6, 197}, DType::f64)).item(), 1e-12);
  // f32 logits of 1000: loss 1000 and a finite gradient, not inf/NaN.
  Tensor big = Tensor::from_vector({1000, 0}, {1, 2}, DType::f32).set_requires_grad(true);
  Tensor loss = ops::cross_entropy(big, Tensor::from_vector({1}, {1}, DType::i64));
  EXPECT_NEAR(loss.item(), 1000.0, 1e-3);
  loss.backward();
  expect_close(big.grad().to_vector(), {1, -1}, 1e-6, 0, "grad");
}

TEST(NnFunctional, CrossEntropyValidatesTargets) {
  Tensor logits = Tensor::zeros({3, 5});
  auto message = [&](const Tensor& t) -> std::string {
    try {
      ops::cross_entropy(logits, t);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  std::string m = message(Tensor::from_vector({0, 7, 1}, {3}, DType::i64));
  EXPECT_NE(m.find("[cross_entropy]"), std::string::npos) << m;
  EXPECT_NE(m.find("7"), std::string::npos) << m;
  EXPECT_NE(message(Tensor::from_vector({0, -1, 1}, {3}, DType::i64)).find("-1"), std::string::npos);
  EXPECT_NE(message(Tensor::from_vector({0, 1, 1}, {3}, DType::f32)).find("i64"), std::string::npos);
  EXPECT_NE(message(Tensor::from_vector({0, 1}, {2}, DType::i64)).find("[cross_entropy]"), std::string::npos);
  EXPECT_THROW(ops::cross_entropy(Tensor::zeros({5}), Tensor::zeros({5}, DType::i64)), Error);
  EXPECT_THROW(ops::soft_target_cross_entropy(logits, Tensor::zeros({3, 4})), Error);
}

}  // namespace
}  // namespace vt::test
