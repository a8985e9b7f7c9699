// Element-wise ops: forward against std:: math in f64, gradients by finite differences, broadcasting.
#include <cmath>

#include "ops/op_harness.h"

namespace vt::test {
namespace {

using Fn1 = double (*)(double);

OpCase unary_case(const std::string& name, Tensor (*op)(const Tensor&), Fn1 ref, double lo, double hi) {
  OpCase c;
  c.name = name;
  c.inputs = {random_tensor({7, 5}, 11, lo, hi)};
  c.fn = [op](const std::vector<Tensor>& in) { return op(in[0]); };
  c.reference = [ref](const std::vector<Tensor>& in) {
    auto v = in[0].to_vector();
    for (auto& x : v) x = ref(x);
    return v;
  };
  return c;
}

TEST(Elementwise, UnaryOpsMatchReferenceAndGradcheck) {
  std::vector<OpCase> cases = {
      unary_case(
          "exp", ops::exp, [](double x) { return std::exp(x); }, -2, 2),
      unary_case(
          "log", ops::log, [](double x) { return std::log(x); }, 0.5, 3),
      unary_case(
          "sqrt", ops::sqrt, [](double x) { return std::sqrt(x); }, 0.5, 3),
      unary_case(
          "rsqrt", ops::rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.5, 3),
      unary_case(
          "tanh", ops::tanh, [](double x) { return std::tanh(x); }, -2, 2),
      unary_case(
          "sigmoid", ops::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -3, 3),
      unary_case(
          "gelu", ops::gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -3, 3),
      unary_case(
          "silu", ops::silu, [](double x) { return x / (1 + std::exp(-x)); }, -3, 3),
      unary_case(
          "square", ops::square, [](double x) { return x * x; }, -2, 2),
      unary_case(
          "neg", ops::neg, [](double x) { return -x; }, -2, 2),
      unary_case(
          "relu", ops::relu, [](double x) { return x > 0 ? x : 0.0; }, -2, 2),
  };
  for (const auto& c : cases) run_op_case(c);
}

TEST(Elementwise, HandComputedGeluValues) {
  // torch.nn.functional.gelu([-1, 0, 1, 2]) = [-0.158655, 0, 0.841345, 1.954500]
  auto y = ops::gelu(Tensor::from_vector({-1, 0, 1, 2}, {4}, DType::f64)).to_vector();
  expect_close(y, {-0.15865525393145707, 0.0, 0.8413447460685429, 1.9544997361036416}, 1e-12);
}

OpCase binary_case(const std::string& name, Tensor (*op)(const Tensor&, const Tensor&), Shape sa, Shape sb,
                   double (*ref)(double, double)) {
  OpCase c;
  c.name = name + to_string(sa) + to_string(sb);
  c.inputs = {random_tensor(sa, 21, 0.5, 2.0), random_tensor(sb, 22, 0.5, 2.0)};
  c.fn = [op](const std::vector<Tensor>& in) { return op(in[0], in[1]); };
  c.reference = [ref, sa, sb](const std::vector<Tensor>& in) {
    Shape out = broadcast_shapes(sa, sb, "ref");
    auto a = in[0].expand(out).to_vector(), b = in[1].expand(out).to_vector();
    for (size_t i = 0; i < a.size(); ++i) a[i] = ref(a[i], b[i]);
    return a;
  };
  return c;
}

TEST(Elementwise, BinaryOpsBroadcastAndGradcheck) {
  std::vector<std::pair<Shape, Shape>> shapes = {{{7, 5}, {7, 5}}, {{7, 5}, {5}}, {{3, 1, 5}, {4, 1}}, {{7, 5}, {}}};
  for (auto [sa, sb] : shapes) {
    run_op_case(binary_case("add", ops::add, sa, sb, [](double a, double b) { return a + b; }));
    run_op_case(binary_case("sub", ops::sub, sa, sb, [](double a, double b) { return a - b; }));
    run_op_case(binary_case("mul", ops::mul, sa, sb, [](double a, double b) { return a * b; }));
    run_op_case(binary_case("div", ops::div, sa, sb, [](double a, double b) { return a / b; }));
  }
}

TEST(Elementwise, ScalarOpsGradcheck) {
  OpCase c;
  c.name = "scalar mix";
  c.inputs = {random_tensor({197}, 5, 0.5, 2.0)};
  c.fn = [](const std::vector<Tensor>& in) { return ops::div(3.0, in[0]) + ops::sub(1.5, in[0] * 2.0) + in[0] / 4.0; };
  c.reference = [](const std::vector<Tensor>& in) {
    auto v = in[0].to_vector();
    for (auto& x : v) x = 3.0 / x + (1.5 - 2 * x) + x / 4;
    return v;
  };
  run_op_case(c);
}

// MiTA's gate x ⊙ SiLU(g), with g read in place from a slice of a packed tensor (the layer's qkvg) and once
// contiguous; the gradient reaches the packed tensor through the slice.
TEST(Elementwise, SiluGateMatchesReferenceAndGradcheck) {
  auto ref = [](double x, double g) { return x * g / (1 + std::exp(-g)); };
  OpCase sliced;
  sliced.name = "silu_gate, g a slice of [4, 3, 10]";
  sliced.inputs = {random_tensor({4, 3, 5}, 31, -3, 3), random_tensor({4, 3, 10}, 32, -4, 4)};
  sliced.fn = [](const std::vector<Tensor>& in) { return ops::silu_gate(in[0], in[1].slice(2, 5, 10)); };
  sliced.reference = [ref](const std::vector<Tensor>& in) {
    auto x = in[0].to_vector(), g = in[1].slice(2, 5, 10).contiguous().to_vector();
    for (size_t i = 0; i < x.size(); ++i) x[i] = ref(x[i], g[i]);
    return x;
  };
  run_op_case(sliced);
  OpCase plain;
  plain.name = "silu_gate, contiguous";
  plain.inputs = {random_tensor({7, 5}, 33, -3, 3), random_tensor({7, 5}, 34, -6, 6)};
  plain.fn = [](const std::vector<Tensor>& in) { return ops::silu_gate(in[0], in[1]); };
  plain.reference = [ref](const std::vector<Tensor>& in) {
    auto x = in[0].to_vector(), g = in[1].to_vector();
    for (size_t i = 0; i < x.size(); ++i) x[i] = ref(x[i], g[i]);
    return x;
  };
  run_op_case(plain);
  EXPECT_THROW(ops::silu_gate(Tensor::zeros({2, 3}), Tensor::zeros({3, 2})), Error);
}

TEST(Elementwise, MismatchedShapesThrowNamingTheOp) {
  Tensor a = Tensor::zeros({3, 4}), b = Tensor::zeros({5});
  try {
    ops::add(a, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[add]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[3, 4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::mul(Tensor::zeros({2}), Tensor::zeros({2}, DType::f64)), Error);
}

}  // namespace
}  // namespace vt::test

namespace vt::test {
namespace {

// The f32 kernels use vectorisable exp/erf approximations: check them against the exact f64 path.
TEST(Elementwise, Float32GeluAndGradMatchFloat64) {
  Tensor x64 = random_tensor({4099}, 77, -8.0, 8.0);
  Tensor x32 = x64.to(DType::f32);
  x32.set_requires_grad(true);
  x64.set_requires_grad(true);
  Tensor y32 = ops::gelu(x32), y64 = ops::gelu(x64);
  expect_close(y32.to_vector(), y64.to_vector(), 2e-6, 2e-6, "gelu f32");
  ops::sum(y32).backward();
  ops::sum(y64).backward();
  expect_close(x32.grad().to_vector(), x64.grad().to_vector(), 2e-6, 2e-6, "gelu' f32");
}

}  // namespace
}  // namespace vt::test
