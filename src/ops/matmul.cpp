// matmul / bmm / linear front-ends. Operands whose last two dims are a transposed view are passed to BLAS with
// a transpose flag instead of being copied, so q·kᵀ and the backward products cost no extra memory traffic.
// CUDA tensors take the same path to cuBLASLt (kernels/cuda/blas.h); Linear uses its bias epilogue forward and
// its bias-gradient epilogue fused into the weight-gradient GEMM backward.
#include "ops/matmul.h"

#include "autograd/node.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/bias_grad.h"
#include "kernels/cuda/blas.h"
#include "kernels/dispatch.h"
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
  if (s[2] == 1 && (s[1] >= std::max<int64_t>(cols, 1) || rows == 1))
    return {x.raw_data(), false, std::max<int64_t>(s[1], cols), s[0]};
  if (s[1] == 1 && (s[2] >= std::max<int64_t>(rows, 1) || cols == 1))
    return {x.raw_data(), true, std::max<int64_t>(s[2], rows), s[0]};
  x = x.contiguous();
  return {x.raw_data(), false, cols, x.strides()[0]};
}

// Flattens the leading batch dims of x (already expanded to `batch`) into one; copies if they do not merge.
Tensor as_batched3(const Tensor& x, const Shape& batch) {
  const int64_t nb = numel(batch);
  Tensor e = x.expand([&] {
    Shape s = batch;
    s.push_back(x.size(-2));
    s.push_back(x.size(-1));
    return s;
  }());
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

// A 2-D matrix described for BLAS (see operand); `keep` holds the view or the copy the pointer refers to.
GemmOperand operand2(const Tensor& m, Tensor& keep) {
  keep = make_view(m, {1, m.size(0), m.size(1)}, {0, m.strides()[0], m.strides()[1]}, m.offset());
  return operand(keep);
}

kernels::cuda::GemmLtOperand lt(const GemmOperand& o) { return {o.data, o.trans, o.ld, o.stride}; }

kernels::cuda::GemmLtArgs lt_args(kernels::Cuda c, DType dt, int64_t batch, int64_t M, int64_t N, int64_t K,
                                  const GemmOperand& A, const GemmOperand& B, void* C, int64_t ldc, int64_t stride_c) {
  kernels::cuda::GemmLtArgs g;
  g.in_dtype = g.out_dtype = dt;
  g.batch = batch, g.M = M, g.N = N, g.K = K;
  g.A = lt(A), g.B = lt(B);
  g.C = C, g.ldc = ldc, g.stride_c = stride_c;
  g.stream = c.stream;
  return g;
}

// C_b [M, N] = op(A_b)·op(B_b) for b < batch (C overwritten) on `dev`: OpenBLAS on the CPU, cuBLASLt on CUDA.
void gemm_on(Device dev, DType dt, int64_t batch, int64_t M, int64_t N, int64_t K, const GemmOperand& A,
             const GemmOperand& B, void* C, int64_t ldc, int64_t stride_c) {
  kernels::dispatch(
      dev, [&] { kernels::cpu::gemm_batched(dt, batch, M, N, K, 1.0, A, B, 0.0, C, ldc, stride_c); },
      [&](kernels::Cuda c) { kernels::cuda::gemm_lt(lt_args(c, dt, batch, M, N, K, A, B, C, ldc, stride_c)); });
}

Tensor matmul_raw(const Tensor& a, const Tensor& b) {
  const Device dev = common_device("matmul", {&a, &b});
  VT_CHECK(a.dim() >= 2 && b.dim() >= 2, "[matmul] needs ≥2-d operands, got ", a.describe(), " and ", b.describe());
  VT_CHECK(a.dtype() == b.dtype(), "[matmul] dtypes differ: ", a.describe(), " and ", b.describe());
  if (dev.is_cuda()) check_cuda_float(a, "matmul");
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  VT_CHECK(b.size(-2) == K, "[matmul] inner dims differ: ", a.describe(), " @ ", b.describe());
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  if (dev.is_cuda() && K == 0) return Tensor::zeros(out_shape, a.dtype(), dev);  // cuBLASLt rejects K = 0
  Tensor out = Tensor::empty(out_shape, a.dtype(), dev);
  const int64_t nb = numel(batch);
  // b shared by the whole batch and a row-contiguous: one GEMM with M·batch rows.
  if (bb.empty() && nb > 1 && a.is_contiguous()) {
    Tensor a2 = make_view(a, {1, nb * M, K}, {0, K, 1}, a.offset());
    Tensor b3 = make_view(b, {1, K, N}, {0, b.strides()[0], b.strides()[1]}, b.offset());
    GemmOperand A = operand(a2), B = operand(b3);
    gemm_on(dev, a.dtype(), 1, nb * M, N, K, A, B, out.raw_data(), N, 0);
    return out;
  }
  Tensor a3 = as_batched3(a.detach(), batch), b3 = as_batched3(b.detach(), batch);
  GemmOperand A = operand(a3), B = operand(b3);
  gemm_on(dev, a.dtype(), nb, M, N, K, A, B, out.raw_data(), N, M * N);
  return out;
}

// On CUDA, the gradient of a b shared by the whole batch (b's batch dims all 1, a not broadcast) is one GEMM over
// the flattened rows, aᵀ [K, rows]·g [rows, N], instead of a batched product summed by sum_to.
bool shared_b_grad_applies(const Tensor& a, const Tensor& b, const Tensor& g) {
  if (!g.device().is_cuda() || numel(Shape(b.shape().begin(), b.shape().end() - 2)) != 1) return false;
  return Shape(a.shape().begin(), a.shape().end() - 2) == Shape(g.shape().begin(), g.shape().end() - 2);
}

struct MatmulBackward : Node {
  Tensor a, b;
  const char* name() const override { return "MatmulBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gb;
    if (needs_grad(0)) ga = sum_to(matmul_raw(g, b.transpose(-1, -2)), a.shape());
    if (needs_grad(1) && shared_b_grad_applies(a, b, g)) {
      const int64_t K = a.size(-1), N = g.size(-1), rows = a.numel() / std::max<int64_t>(K, 1);
      gb = matmul_raw(a.reshape({rows, K}).transpose(0, 1), g.reshape({rows, N})).reshape(b.shape());
    } else if (needs_grad(1)) {
      gb = sum_to(matmul_raw(a.transpose(-1, -2), g), b.shape());
    }
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
    if (g.device().is_cuda()) {
      detail::linear_2d_backward_cuda(g2, x2, weight, needs_grad(0), needs_grad(1), needs_grad(2), gx, gw, gb);
      if (gx.defined()) gx = gx.reshape(input_shape);
      return {gx, gw, gb};
    }
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
  // bf16 with f32 promotes to f32, as the element-wise ops do (a bf16 activation meeting an f32 one under
  // autocast); the differentiable to() returns the bf16 operand's gradient in bf16.
  const bool promote =
      (a.dtype() == DType::bf16 && b.dtype() == DType::f32) || (a.dtype() == DType::f32 && b.dtype() == DType::bf16);
  if (promote) return matmul(a.to(DType::f32), b.to(DType::f32));
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
  const Device dev = common_device("linear", {&x, &weight, &bias});
  VT_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "[linear] input ", x.describe(),
           " does not fit weight ", weight.describe());
  VT_CHECK(x.dtype() == weight.dtype(), "[linear] dtypes differ: ", x.describe(), " and ", weight.describe());
  const int64_t in = weight.size(1), out_f = weight.size(0), M = x.numel() / std::max<int64_t>(in, 1);
  if (bias.defined())
    VT_CHECK(bias.dim() == 1 && bias.size(0) == out_f && bias.dtype() == x.dtype(), "[linear] bias ", bias.describe(),
             " does not fit weight ", weight.describe());
  Tensor x2 = x.detach().contiguous().reshape({M, in});
  Shape out_shape = x.shape();
  out_shape.back() = out_f;
  if (dev.is_cuda()) {
    Tensor out = detail::linear_2d_cuda(x2, weight.detach(), bias.defined() ? bias.detach() : Tensor());
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
  Tensor w = weight.detach().contiguous();
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

namespace detail {

Tensor linear_2d_cuda(const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  const Device dev = common_device("linear", {&x2, &weight, &bias});
  VT_CHECK(dev.is_cuda(), "[linear] linear_2d_cuda needs CUDA tensors, got ", x2.describe(), " on ", dev.str());
  check_cuda_float(x2, "linear");
  VT_CHECK(x2.dtype() == weight.dtype() && (!bias.defined() || bias.dtype() == x2.dtype()),
           "[linear] dtypes differ: ", x2.describe(), ", ", weight.describe(),
           bias.defined() ? ", " + bias.describe() : std::string());
  const int64_t M = x2.size(0), in = x2.size(1), out_f = weight.size(0);
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  if (in == 0) {  // cuBLASLt rejects K = 0: the product is zero
    Tensor out = Tensor::zeros({M, out_f}, x2.dtype(), dev);
    if (bc.defined()) out.copy_(bc.reshape({1, out_f}).expand({M, out_f}));
    return out;
  }
  Tensor out = Tensor::empty({M, out_f}, x2.dtype(), dev);
  Tensor wk;
  const GemmOperand W = operand2(weight, wk);  // stored [out, in]; op(B) = Wᵀ
  kernels::on_cuda(dev, [&](kernels::Cuda c) {
    auto g = lt_args(c, x2.dtype(), 1, M, out_f, in, {x2.raw_data(), false, in, 0}, {W.data, !W.trans, W.ld, 0},
                     out.raw_data(), out_f, 0);
    if (bc.defined() && out_f > 0) {
      g.epilogue = kernels::cuda::GemmEpilogue::bias;
      g.bias = bc.raw_data();
    }
    kernels::cuda::gemm_lt(g);
  });
  return out;
}

void linear_2d_backward_cuda(const Tensor& g2, const Tensor& x2, const Tensor& weight, bool want_x, bool want_w,
                             bool want_b, Tensor& gx, Tensor& gw, Tensor& gb) {
  const Device dev = g2.device();
  const DType dt = weight.dtype();
  const int64_t M = g2.size(0), in = weight.size(1), out_f = weight.size(0);
  const Tensor g = (g2.dtype() == dt ? g2 : g2.to(dt)).contiguous();
  Tensor wk;
  const GemmOperand W = operand2(weight, wk);  // op(B) = W [out, in] as stored
  kernels::on_cuda(dev, [&](kernels::Cuda c) {
    if (want_x) {
      // gx [M, in] = g [M, out] · W [out, in]
      if (out_f == 0) {
        gx = Tensor::zeros({M, in}, dt, dev);
      } else {
        gx = Tensor::empty({M, in}, dt, dev);
        kernels::cuda::gemm_lt(
            lt_args(c, dt, 1, M, in, out_f, {g.raw_data(), false, out_f, 0}, W, gx.raw_data(), in, 0));
      }
    }
    if (M == 0) {  // no rows: the sums are empty
      if (want_w) gw = Tensor::zeros({out_f, in}, dt, dev);
      if (want_b) gb = Tensor::zeros({out_f}, dt, dev);
      return;
    }
    if (want_b) gb = Tensor::empty({out_f}, dt, dev);
    if (want_w) {
      // gw [out, in] = gᵀ [out, M] · x2 [M, in]; gb [out] = row sums of gᵀ (gemm_lt's bias_grad_a).
      gw = Tensor::empty({out_f, in}, dt, dev);
      auto args = lt_args(c, dt, 1, out_f, in, M, {g.raw_data(), true, out_f, 0}, {x2.raw_data(), false, in, 0},
                          gw.raw_data(), in, 0);
      if (want_b && out_f > 0) {
        args.epilogue = kernels::cuda::GemmEpilogue::bias_grad_a;
        args.bias_grad = gb.raw_data();
      }
      kernels::cuda::gemm_lt(args);
    } else if (want_b) {
      kernels::cuda::sum_rows_strided(gb.raw_data(), dt, g.raw_data(), dt, out_f, M, 1, out_f, c.stream);
    }
  });
}

}  // namespace detail

}  // namespace vt::ops
