// ops::silu_gate (elementwise.h): MiTA's gate x ⊙ SiLU(g) in one pass each way, its operands read as [rows, cols]
// with each one's own row stride, so that g can stay a slice of the packed qkvg.
#include "autograd/node.h"
#include "kernels/cpu/silu_gate.h"
#include "kernels/cuda/silu_gate.h"
#include "kernels/dispatch.h"
#include "ops/elementwise.h"

namespace vt::ops {

namespace {

// t as rows of its last dim: {data view, row stride}; a copy when its rows are not evenly strided.
std::pair<Tensor, int64_t> as_rows(const Tensor& t) {
  const int64_t n = t.dim();
  bool even = n >= 1 && t.strides()[n - 1] == 1;
  for (int64_t i = 0; even && i + 2 < n; ++i) even = t.strides()[i] == t.strides()[i + 1] * t.shape()[i + 1];
  const Tensor r = even ? t.detach() : t.contiguous().detach();
  return {r, n >= 2 ? r.strides()[n - 2] : r.shape().back()};
}

int64_t row_count(const Tensor& t) { return t.numel() == 0 ? 0 : t.numel() / t.shape().back(); }

void check_pair(const char* op, const Tensor& x, const Tensor& g) {
  VT_CHECK(x.dim() >= 1 && x.shape() == g.shape() && x.dtype() == g.dtype(), "[", op, "] x ", x.describe(), " and g ",
           g.describe(), " must have the same shape and dtype");
}

struct SiluGateBackward : Node {
  Tensor x, g;
  const char* name() const override { return "SiluGateBackward"; }
  std::vector<Tensor> backward(const Tensor& dy) override {
    auto [dx, dg] = silu_gate_grads(dy, x, g);
    return {dx, dg};
  }
  void release() override { x = g = Tensor(); }
};

}  // namespace

Tensor silu_gate(const Tensor& x, const Tensor& g) {
  const bool mixed = x.dtype() != g.dtype() && (x.dtype() == DType::f32 || g.dtype() == DType::f32) &&
                     (x.dtype() == DType::bf16 || g.dtype() == DType::bf16);
  if (mixed) return silu_gate(x.to(DType::f32), g.to(DType::f32));  // bf16 with f32 gives f32, as x * silu(g)
  check_pair("silu_gate", x, g);
  const Device dev = common_device("silu_gate", {&x, &g});
  const auto [xr, xs] = as_rows(x);
  const auto [gr, gs] = as_rows(g);
  const int64_t rows = row_count(x), cols = x.shape().back();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), dev);
  kernels::dispatch(
      dev,
      [&] {
        kernels::cpu::silu_gate_forward(x.dtype(), y.raw_data(), xr.raw_data(), xs, gr.raw_data(), gs, rows, cols);
      },
      [&](kernels::Cuda c) {
        kernels::cuda::silu_gate_forward(x.dtype(), y.raw_data(), xr.raw_data(), xs, gr.raw_data(), gs, rows, cols,
                                         c.stream);
      });
  if (any_requires_grad({&x, &g})) {
    auto node = std::make_shared<SiluGateBackward>();
    node->x = xr, node->g = gr;
    attach_node(y, node, {&x, &g});
  }
  return y;
}

std::pair<Tensor, Tensor> silu_gate_grads(const Tensor& dy, const Tensor& x, const Tensor& g) {
  check_pair("silu_gate_grads", x, g);
  VT_CHECK(dy.shape() == x.shape() && dy.dtype() == x.dtype(), "[silu_gate_grads] dy ", dy.describe(),
           " does not match x ", x.describe());
  const Device dev = common_device("silu_gate_grads", {&dy, &x, &g});
  const Tensor d = dy.contiguous().detach();
  const auto [xr, xs] = as_rows(x);
  const auto [gr, gs] = as_rows(g);
  const int64_t rows = row_count(x), cols = x.shape().back();
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), dev), dg = Tensor::empty(x.shape(), x.dtype(), dev);
  kernels::dispatch(
      dev,
      [&] {
        kernels::cpu::silu_gate_backward(x.dtype(), dx.raw_data(), dg.raw_data(), d.raw_data(), xr.raw_data(), xs,
                                         gr.raw_data(), gs, rows, cols);
      },
      [&](kernels::Cuda c) {
        kernels::cuda::silu_gate_backward(x.dtype(), dx.raw_data(), dg.raw_data(), d.raw_data(), xr.raw_data(), xs,
                                          gr.raw_data(), gs, rows, cols, c.stream);
      });
  return {dx, dg};
}

}  // namespace vt::ops
