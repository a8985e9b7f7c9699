// matmul / bmm / linear front-ends. Operands whose last two dims are a transposed view are passed to BLAS with
// a transpose flag instead of being copied, so q·kᵀ and the backward products cost no extra memory traffic.
#include "ops/matmul.h"

#include "autograd/node.h"
#include "kernels/cpu/gemm.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace vt::ops {

using kernels::cpu::GemmOperand;

namespace {

// Describes x [batch, rows, cols] (batch dims already flattened into one, possibly stride 0) for BLAS,
// copying only when the matrix dims are neither row- nor column-major.
GemmOperand operand(Tensor& x) {
  auto s = x.strides();
  const int64_t rows = x.size(-2), cols = x.size(-1);
  if (s[2] == 1 && (s[1] >= std::max<int64_t>(cols, 1) || rows == 1)) return {x.raw_data(), false, std::max<int64_t>(s[1], cols), s[0]};
  if (s[1] == 1 && (s[2] >= std::max<int64_t>(rows, 1) || cols == 1)) return {x.raw_data(), true, std::max<int64_t>(s[2], rows), s[0]};
  x = x.contiguous();
  return {x.raw_data(), false, cols, x.strides()[0]};
}

// Flattens the leading batch dims of x (already expanded to `batch`) into one; copies if they do not merge.
Tensor as_batched3(const Tensor& x, const Shape& batch) {
  const int64_t nb = numel(batch);
  Tensor e = x.expand([&] { Shape s = batch; s.push_back(x.size(-2)); s.push_back(x.size(-1)); return s; }());
  // Batch dims merge when each stride equals the next one times its size (or all are 0: broadcast). Dims of
  // size 1 are skipped: their stride is arbitrary (e.g. a stepped slice) and says nothing about the others.
  const auto& st = e.strides();
  const int64_t nd = e.dim() - 2;
  std::vector<int64_t> live;  // batch dims of size > 1
  for (int64_t i = 0; i < nd; ++i)
    if (batch[i] != 1) live.push_back(i);
  bool merge = true, all_zero = true;
  for (int64_t i : live) all_zero = all_zero && st[i] == 0;
  for (size_t k = 0; k + 1 < live.size(); ++k) merge = merge && st[live[k]] == st[live[k + 1]] * batch[live[k + 1]];
  if (!(merge || all_zero)) e = e.contiguous();
  const int64_t bstride = live.empty() || all_zero ? 0 : e.strides()[live.back()];
  return make_view(e, {nb, x.size(-2), x.size(-1)}, {bstride, e.strides()[nd], e.strides()[nd + 1]}, e.offset());
}

Tensor matmul_raw(const Tensor& a, const Tensor& b) {
  require_cpu("matmul", {&a, &b});
  VT_CHECK(a.dim() >= 2 && b.dim() >= 2, "[matmul] needs ≥2-d operands, got ", a.describe(), " and ", b.describe());
  VT_CHECK(a.dtype() == b.dtype(), "[matmul] dtypes differ: ", a.describe(), " and ", b.describe());
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  VT_CHECK(b.size(-2) == K, "[matmul] inner dims differ: ", a.describe(), " @ ", b.describe());
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  Tensor out = Tensor::empty(out_shape, a.dtype(), a.device());
  const int64_t nb = numel(batch);
  // b shared by the whole batch and a row-contiguous: one GEMM with M·batch rows.
  if (bb.empty() && nb > 1 && a.is_contiguous()) {
    Tensor a2 = make_view(a, {1, nb * M, K}, {0, K, 1}, a.offset());
    Tensor b3 = make_view(b, {1, K, N}, {0, b.strides()[0], b.strides()[1]}, b.offset());
    GemmOperand A = operand(a2), B = operand(b3);
    kernels::cpu::gemm_batched(a.dtype(), 1, nb * M, N, K, 1.0, A, B, 0.0, out.raw_data(), N, 0);
    return out;
  }
  Tensor a3 = as_batched3(a.detach(), batch), b3 = as_batched3(b.detach(), batch);
  GemmOperand A = operand(a3), B = operand(b3);
  kernels::cpu::gemm_batched(a.dtype(), nb, M, N, K, 1.0, A, B, 0.0, out.raw_data(), N, M * N);
  return out;
}

struct MatmulBackward : Node {
  Tensor a, b;
  const char* name() const override { return "MatmulBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gb;
    if (needs_grad(0)) ga = sum_to(matmul_raw(g, b.transpose(-1, -2)), a.shape());
    if (needs_grad(1)) gb = sum_to(matmul_raw(a.transpose(-1, -2), g), b.shape());
    return {ga, gb};
  }
  void release() override { a = b = Tensor(); }
};

struct LinearBackward : Node {
  Tensor x2, weight;  // x2: input flattened to [M, in], contiguous
  Shape input_shape;
  const char* name() const override { return "LinearBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const int64_t M = x2.size(0), in = x2.size(1), out = weight.size(0);
    Tensor g2 = g.contiguous().reshape({M, out});
    Tensor gx, gw, gb;
    Tensor w = weight.contiguous();
    if (needs_grad(0)) {
      gx = Tensor::empty({M, in}, g.dtype());
      kernels::cpu::gemm_batched(g.dtype(), 1, M, in, out, 1.0, {g2.raw_data(), false, out, 0},
                                 {w.raw_data(), false, in, 0}, 0.0, gx.raw_data(), in, 0);
      gx = gx.reshape(input_shape);
    }
    if (needs_grad(1)) {
      gw = Tensor::empty({out, in}, g.dtype());
      kernels::cpu::gemm_batched(g.dtype(), 1, out, in, M, 1.0, {g2.raw_data(), true, out, 0},
                                 {x2.raw_data(), false, in, 0}, 0.0, gw.raw_data(), in, 0);
    }
    if (needs_grad(2)) gb = sum(g2, {0});
    return {gx, gw, gb};
  }
  void release() override { x2 = weight = Tensor(); }
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  Tensor out = matmul_raw(a, b);
  if (any_requires_grad({&a, &b})) {
    auto node = std::make_shared<MatmulBackward>();
    node->a = a.detach();
    node->b = b.detach();
    attach_node(out, node, {&a, &b});
  }
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  VT_CHECK(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0), "[bmm] needs [B, M, K] @ [B, K, N], got ",
           a.describe(), " and ", b.describe());
  return matmul(a, b);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  require_cpu("linear", {&x, &weight, &bias});
  VT_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "[linear] input ", x.describe(),
           " does not fit weight ", weight.describe());
  VT_CHECK(x.dtype() == weight.dtype(), "[linear] dtypes differ: ", x.describe(), " and ", weight.describe());
  const int64_t in = weight.size(1), out_f = weight.size(0), M = x.numel() / std::max<int64_t>(in, 1);
  if (bias.defined())
    VT_CHECK(bias.dim() == 1 && bias.size(0) == out_f && bias.dtype() == x.dtype(), "[linear] bias ", bias.describe(),
             " does not fit weight ", weight.describe());
  Tensor x2 = x.detach().contiguous().reshape({M, in});
  Tensor w = weight.detach().contiguous();
  Shape out_shape = x.shape();
  out_shape.back() = out_f;
  Tensor out = Tensor::empty({M, out_f}, x.dtype());
  double beta = 0.0;
  if (bias.defined()) {
    Tensor bc = bias.detach().contiguous();
    VT_DISPATCH_FLOAT(x.dtype(), "linear", [&] {
      scalar_t* o = out.data<scalar_t>();
      const scalar_t* bp = bc.data<scalar_t>();
      for (int64_t r = 0; r < M; ++r) std::copy(bp, bp + out_f, o + r * out_f);
    });
    beta = 1.0;
  }
  kernels::cpu::gemm_batched(x.dtype(), 1, M, out_f, in, 1.0, {x2.raw_data(), false, in, 0},
                             {w.raw_data(), true, in, 0}, beta, out.raw_data(), out_f, 0);
  out = out.reshape(out_shape);
  if (any_requires_grad({&x, &weight, &bias})) {
    auto node = std::make_shared<LinearBackward>();
    node->x2 = x2;
    node->weight = weight.detach();
    node->input_shape = x.shape();
    attach_node(out, node, {&x, &weight, &bias});
  }
  return out;
}

}  // namespace vt::ops
