// Front-ends of the element-wise ops: broadcast, allocate, run the CPU kernel, record the backward node.
#include "ops/elementwise.h"

#include "autograd/node.h"
#include "kernels/cpu/elementwise.h"
#include "ops/reduce.h"

namespace vt::ops {

using kernels::cpu::BinaryOp;
using kernels::cpu::UnaryOp;

namespace {

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::sub: return "sub";
    case BinaryOp::mul: return "mul";
    case BinaryOp::div: return "div";
  }
  return "?";
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  VT_CHECK(a.dtype() == b.dtype(), "[", op, "] dtypes differ: ", a.describe(), " and ", b.describe());
  VT_CHECK(a.device() == b.device(), "[", op, "] devices differ: ", a.device().str(), " and ", b.device().str());
}

Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  require_cpu(name, {&a, &b});
  check_same_dtype(name, a, b);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor ea = a.detach().expand(shape), eb = b.detach().expand(shape);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  kernels::cpu::binary_forward(op, a.dtype(), out.raw_data(), ea.raw_data(), ea.strides(), eb.raw_data(),
                               eb.strides(), shape);
  return out;
}

struct BinaryBackward : Node {
  BinaryOp op;
  Tensor a, b;  // saved only for mul/div
  Shape a_shape, b_shape;
  const char* name() const override { return "BinaryBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gb;
    switch (op) {
      case BinaryOp::add:
        if (needs_grad(0)) ga = g;
        if (needs_grad(1)) gb = g;
        break;
      case BinaryOp::sub:
        if (needs_grad(0)) ga = g;
        if (needs_grad(1)) gb = neg(g);
        break;
      case BinaryOp::mul:
        if (needs_grad(0)) ga = mul(g, b);
        if (needs_grad(1)) gb = mul(g, a);
        break;
      case BinaryOp::div:
        if (needs_grad(0)) ga = div(g, b);
        if (needs_grad(1)) gb = neg(div(mul(g, a), mul(b, b)));
        break;
    }
    if (ga.defined()) ga = sum_to(ga, a_shape);
    if (gb.defined()) gb = sum_to(gb, b_shape);
    return {ga, gb};
  }
  void release() override { a = b = Tensor(); }
};

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = binary_raw(op, a, b);
  if (any_requires_grad({&a, &b})) {
    auto node = std::make_shared<BinaryBackward>();
    node->op = op;
    node->a_shape = a.shape();
    node->b_shape = b.shape();
    if (op == BinaryOp::mul || op == BinaryOp::div) {
      node->a = a.detach();
      node->b = b.detach();
    }
    attach_node(out, node, {&a, &b});
  }
  return out;
}

struct ScalarBackward : Node {
  BinaryOp op;
  double s;
  bool scalar_left;
  Tensor a;  // input, for s / a
  const char* name() const override { return "ScalarBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    switch (op) {
      case BinaryOp::add: return {g};
      case BinaryOp::sub: return {scalar_left ? neg(g) : g};
      case BinaryOp::mul: return {mul(g, s)};
      case BinaryOp::div: return {scalar_left ? mul(div(g, mul(a, a)), -s) : mul(g, 1.0 / s)};
    }
    return {Tensor()};
  }
  void release() override { a = Tensor(); }
};

Tensor scalar_op(BinaryOp op, const Tensor& a, double s, bool scalar_left) {
  require_cpu(binary_name(op), {&a});
  Tensor x = a.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  kernels::cpu::binary_scalar(op, a.dtype(), out.raw_data(), x.raw_data(), s, scalar_left, a.numel());
  if (any_requires_grad({&a})) {
    auto node = std::make_shared<ScalarBackward>();
    node->op = op;
    node->s = s;
    node->scalar_left = scalar_left;
    if (op == BinaryOp::div && scalar_left) node->a = x.detach();
    attach_node(out, node, {&a});
  }
  return out;
}

struct UnaryBackward : Node {
  UnaryOp op;
  Tensor x, y;
  const char* name() const override { return "UnaryBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gc = g.contiguous();
    Tensor dx = Tensor::empty(gc.shape(), gc.dtype(), gc.device());
    kernels::cpu::unary_backward(op, gc.dtype(), dx.raw_data(), gc.raw_data(), x.defined() ? x.raw_data() : nullptr,
                                 y.defined() ? y.raw_data() : nullptr, gc.numel());
    return {dx};
  }
  void release() override { x = y = Tensor(); }
};

bool backward_uses_input(UnaryOp op) {
  return op == UnaryOp::log || op == UnaryOp::gelu || op == UnaryOp::silu || op == UnaryOp::square;
}

const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::exp: return "exp";
    case UnaryOp::log: return "log";
    case UnaryOp::sqrt: return "sqrt";
    case UnaryOp::rsqrt: return "rsqrt";
    case UnaryOp::tanh: return "tanh";
    case UnaryOp::sigmoid: return "sigmoid";
    case UnaryOp::gelu: return "gelu";
    case UnaryOp::silu: return "silu";
    case UnaryOp::square: return "square";
    case UnaryOp::neg: return "neg";
  }
  return "?";
}

Tensor unary(UnaryOp op, const Tensor& in) {
  require_cpu(unary_name(op), {&in});
  Tensor x = in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  kernels::cpu::unary_forward(op, x.dtype(), out.raw_data(), x.raw_data(), x.numel());
  if (any_requires_grad({&in})) {
    auto node = std::make_shared<UnaryBackward>();
    node->op = op;
    if (backward_uses_input(op)) node->x = x.detach();
    else if (op != UnaryOp::neg) node->y = out.detach();
    attach_node(out, node, {&in});
  }
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, a, b); }
Tensor add(const Tensor& a, double s) { return scalar_op(BinaryOp::add, a, s, false); }
Tensor mul(const Tensor& a, double s) { return scalar_op(BinaryOp::mul, a, s, false); }
Tensor sub(double s, const Tensor& a) { return scalar_op(BinaryOp::sub, a, s, true); }
Tensor div(double s, const Tensor& a) { return scalar_op(BinaryOp::div, a, s, true); }
Tensor neg(const Tensor& a) { return unary(UnaryOp::neg, a); }

Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::rsqrt, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, x); }
Tensor gelu(const Tensor& x) { return unary(UnaryOp::gelu, x); }
Tensor silu(const Tensor& x) { return unary(UnaryOp::silu, x); }
Tensor square(const Tensor& x) { return unary(UnaryOp::square, x); }

void add_(const Tensor& a, const Tensor& b) {
  require_cpu("add_", {&a, &b});
  check_same_dtype("add_", a, b);
  VT_CHECK(a.is_contiguous(), "[add_] destination must be contiguous, got ", a.describe());
  Tensor eb = b.detach().expand(a.shape());
  kernels::cpu::binary_forward(BinaryOp::add, a.dtype(), a.raw_data(), a.raw_data(), a.strides(), eb.raw_data(),
                               eb.strides(), a.shape());
}

void mul_(const Tensor& a, double s) {
  require_cpu("mul_", {&a});
  VT_CHECK(a.is_contiguous(), "[mul_] destination must be contiguous, got ", a.describe());
  kernels::cpu::binary_scalar(BinaryOp::mul, a.dtype(), a.raw_data(), a.raw_data(), s, false, a.numel());
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  VT_CHECK(lead >= 0, "[sum_to] cannot reduce ", g.describe(), " to ", to_string(shape));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < g.dim(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) dims.push_back(i);
  Tensor r = dims.empty() ? g : sum(g, dims, true);
  return r.reshape(shape);
}

}  // namespace vt::ops
