// Front-ends of the element-wise ops: broadcast, promote (bf16 ⊕ f32 → f32), allocate, run the CPU or CUDA
// kernel, record the backward node.
#include "ops/elementwise.h"

#include "autograd/node.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/dispatch.h"
#include "ops/reduce.h"

namespace vt::ops {

using kernels::BinaryOp;
using kernels::UnaryOp;

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

// The dtype of a binary op's result: the common dtype, or f32 for bf16 ⊕ f32 (as PyTorch). Other pairs fail.
DType result_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() == b.dtype()) return a.dtype();
  const bool promotes =
      (a.dtype() == DType::bf16 && b.dtype() == DType::f32) || (a.dtype() == DType::f32 && b.dtype() == DType::bf16);
  VT_CHECK(promotes, "[", op, "] dtypes differ: ", a.describe(), " and ", b.describe(),
           " (only bf16 and f32 mix, giving f32)");
  return DType::f32;
}

Tensor as_dtype(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : t.to(dtype); }

// out (contiguous, out's shape) = a op b with a and b broadcast to it; out may be a itself (in-place add).
void run_binary(BinaryOp op, const char* name, const Tensor& out, const Tensor& a, const Tensor& b) {
  Device dev = common_device(name, {&out, &a, &b});
  kernels::dispatch(
      dev,
      [&] {
        // The CPU kernels take one dtype: a bf16 operand of a promoted op is converted to f32 first.
        Tensor ea = as_dtype(a.detach(), out.dtype()).expand(out.shape());
        Tensor eb = as_dtype(b.detach(), out.dtype()).expand(out.shape());
        kernels::cpu::binary_forward(op, out.dtype(), out.raw_data(), ea.raw_data(), ea.strides(), eb.raw_data(),
                                     eb.strides(), out.shape());
      },
      [&](kernels::Cuda c) {
        Tensor ea = a.detach().expand(out.shape()), eb = b.detach().expand(out.shape());
        kernels::cuda::binary_forward(op, out.dtype(), out.raw_data(), ea.dtype(), ea.raw_data(), ea.strides(),
                                      eb.dtype(), eb.raw_data(), eb.strides(), out.shape(), c.stream);
      });
}

Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  Device dev = common_device(name, {&a, &b});
  DType dtype = result_dtype(name, a, b);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, dtype, dev);
  run_binary(op, name, out, a, b);
  return out;
}

struct BinaryBackward : Node {
  BinaryOp op;
  Tensor a, b;  // saved only for mul/div, in their own dtypes
  Shape a_shape, b_shape;
  DType a_dtype, b_dtype;
  const char* name() const override { return "BinaryBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gb;
    // A promoted op (bf16 ⊕ f32) differentiates in f32: g is f32; saved operands are widened here.
    const Tensor av = a.defined() ? as_dtype(a, g.dtype()) : Tensor();
    const Tensor bv = b.defined() ? as_dtype(b, g.dtype()) : Tensor();
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
        if (needs_grad(0)) ga = mul(g, bv);
        if (needs_grad(1)) gb = mul(g, av);
        break;
      case BinaryOp::div:
        if (needs_grad(0)) ga = div(g, bv);
        if (needs_grad(1)) gb = neg(div(mul(g, av), mul(bv, bv)));
        break;
    }
    if (ga.defined()) ga = as_dtype(sum_to(ga, a_shape), a_dtype);
    if (gb.defined()) gb = as_dtype(sum_to(gb, b_shape), b_dtype);
    return {ga, gb};
  }
  void release() override { a = b = Tensor(); }
};

Tensor attach_binary(BinaryOp op, Tensor out, const Tensor& a, const Tensor& b) {
  if (any_requires_grad({&a, &b})) {
    auto node = std::make_shared<BinaryBackward>();
    node->op = op;
    node->a_shape = a.shape();
    node->b_shape = b.shape();
    node->a_dtype = a.dtype();
    node->b_dtype = b.dtype();
    if (op == BinaryOp::mul || op == BinaryOp::div) {
      node->a = a.detach();
      node->b = b.detach();
    }
    attach_node(out, node, {&a, &b});
  }
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) { return attach_binary(op, binary_raw(op, a, b), a, b); }

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

// out = x op s (or s op x), n contiguous elements; out may be x itself (in-place mul).
void run_scalar(BinaryOp op, const char* name, const Tensor& out, const Tensor& x, double s, bool scalar_left) {
  Device dev = common_device(name, {&out, &x});
  kernels::dispatch(
      dev, [&] { kernels::cpu::binary_scalar(op, x.dtype(), out.raw_data(), x.raw_data(), s, scalar_left, x.numel()); },
      [&](kernels::Cuda c) {
        kernels::cuda::binary_scalar(op, x.dtype(), out.raw_data(), x.raw_data(), s, scalar_left, x.numel(), c.stream);
      });
}

Tensor scalar_op(BinaryOp op, const Tensor& a, double s, bool scalar_left) {
  Tensor x = a.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  run_scalar(op, binary_name(op), out, x, s, scalar_left);
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
    const void* px = x.defined() ? x.raw_data() : nullptr;
    const void* py = y.defined() ? y.raw_data() : nullptr;
    Device dev = common_device("unary_backward", {&gc, &x, &y});
    kernels::dispatch(
        dev, [&] { kernels::cpu::unary_backward(op, gc.dtype(), dx.raw_data(), gc.raw_data(), px, py, gc.numel()); },
        [&](kernels::Cuda c) {
          kernels::cuda::unary_backward(op, gc.dtype(), dx.raw_data(), gc.raw_data(), px, py, gc.numel(), c.stream);
        });
    return {dx};
  }
  void release() override { x = y = Tensor(); }
};

bool backward_uses_input(UnaryOp op) {
  return op == UnaryOp::log || op == UnaryOp::gelu || op == UnaryOp::silu || op == UnaryOp::square ||
         op == UnaryOp::relu;
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
    case UnaryOp::relu: return "relu";
  }
  return "?";
}

Tensor unary(UnaryOp op, const Tensor& in) {
  const char* name = unary_name(op);
  Device dev = common_device(name, {&in});
  Tensor x = in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), dev);
  kernels::dispatch(
      dev, [&] { kernels::cpu::unary_forward(op, x.dtype(), out.raw_data(), x.raw_data(), x.numel()); },
      [&](kernels::Cuda c) {
        kernels::cuda::unary_forward(op, x.dtype(), out.raw_data(), x.raw_data(), x.numel(), c.stream);
      });
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
Tensor record_add(Tensor sum, const Tensor& a, const Tensor& b) {
  VT_CHECK(sum.shape() == a.shape() && sum.shape() == b.shape() && !sum.grad_fn(), "[record_add] ", sum.describe(),
           " is not a fresh sum of ", a.describe(), " and ", b.describe());
  return attach_binary(BinaryOp::add, std::move(sum), a, b);
}
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
Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, x); }
Tensor square(const Tensor& x) { return unary(UnaryOp::square, x); }

void add_(const Tensor& a, const Tensor& b) {
  common_device("add_", {&a, &b});
  VT_CHECK(result_dtype("add_", a, b) == a.dtype(), "[add_] cannot add ", b.describe(), " into ", a.describe(),
           " in place (the result would be f32)");
  VT_CHECK(a.is_contiguous(), "[add_] destination must be contiguous, got ", a.describe());
  run_binary(BinaryOp::add, "add_", a, a, b);
}

void mul_(const Tensor& a, double s) {
  VT_CHECK(a.is_contiguous(), "[mul_] destination must be contiguous, got ", a.describe());
  run_scalar(BinaryOp::mul, "mul_", a, a, s, false);
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
