// Front-ends of the fused NN ops (softmax, log_softmax, layer_norm, cross-entropy losses) and their backward
// nodes. Each forward saves what its fused backward kernel needs: softmax its output, layer_norm the row
// mean/rstd, the losses the row log-sum-exp.
#include "ops/nn_functional.h"

#include "autograd/node.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/softmax.h"

namespace vt::ops {

namespace {

// ---------------------------------------------------------------- softmax / log_softmax

struct SoftmaxBackward : Node {
  bool log = false;
  Tensor y;  // the forward output, detached
  int64_t outer = 1, R = 1, inner = 1;
  const char* name() const override { return log ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gc = g.contiguous();
    Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
    kernels::cpu::softmax_backward(y.dtype(), dx.raw_data(), gc.raw_data(), y.raw_data(), outer, R, inner, log);
    return {dx};
  }
  void release() override { y = Tensor(); }
};

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  require_cpu(op, {&x});
  dim = wrap_dim(dim, x.dim(), op);
  Tensor xc = x.detach().contiguous();
  int64_t outer = 1, R = 1, inner = 1;
  for (int64_t i = 0; i < x.dim(); ++i) {
    const int64_t s = x.shape()[i];
    if (i < dim) outer *= s;
    else if (i == dim) R = s;
    else inner *= s;
  }
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.numel() > 0) kernels::cpu::softmax_forward(x.dtype(), y.raw_data(), xc.raw_data(), outer, R, inner, log);
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<SoftmaxBackward>();
    node->log = log;
    node->y = y.detach();
    node->outer = outer;
    node->R = R;
    node->inner = inner;
    attach_node(y, node, {&x});
  }
  return y;
}

// ---------------------------------------------------------------- layer_norm

struct LayerNormBackward : Node {
  Tensor x, weight, mean, rstd;  // x contiguous; weight undefined when absent
  bool has_bias = false;
  int64_t rows = 0, C = 0;
  const char* name() const override { return "LayerNormBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gc = g.contiguous();
    Tensor dx, dw, db;
    if (needs_grad(0)) dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    if (needs_grad(1)) dw = Tensor::empty({C}, x.dtype(), x.device());
    if (needs_grad(2)) db = Tensor::empty({C}, x.dtype(), x.device());
    auto ptr = [](const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; };
    kernels::cpu::layer_norm_backward(x.dtype(), ptr(dx), ptr(dw), ptr(db), gc.raw_data(), x.raw_data(),
                                      mean.raw_data(), rstd.raw_data(), ptr(weight), rows, C);
    return {dx, dw, db};
  }
  void release() override { x = weight = mean = rstd = Tensor(); }
};

void check_affine(const Tensor& p, const char* what, const Tensor& x, int64_t C) {
  if (!p.defined()) return;
  VT_CHECK(p.shape() == Shape{C}, "[layer_norm] ", what, " must be [", C, "] for input ", x.describe(), ", got ",
           p.describe());
  VT_CHECK(p.dtype() == x.dtype(), "[layer_norm] ", what, " ", p.describe(), " does not match input ",
           x.describe());
}

// ---------------------------------------------------------------- losses

void check_logits(const Tensor& logits, const char* op) {
  VT_CHECK(logits.dim() == 2, "[", op, "] logits must be [B, C], got ", logits.describe());
  VT_CHECK(logits.shape()[1] > 0, "[", op, "] logits have no classes: ", logits.describe());
}

struct CrossEntropyBackward : Node {
  Tensor logits, target, lse;
  double smoothing = 0;
  const char* name() const override { return "CrossEntropyBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const int64_t B = logits.shape()[0], C = logits.shape()[1];
    Tensor dx = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
    kernels::cpu::cross_entropy_backward(logits.dtype(), dx.raw_data(), logits.raw_data(), lse.raw_data(),
                                         target.data<int64_t>(), B, C, smoothing,
                                         g.item() / static_cast<double>(B));
    return {dx, Tensor()};
  }
  void release() override { logits = target = lse = Tensor(); }
};

struct SoftTargetCrossEntropyBackward : Node {
  Tensor logits, target, lse;
  const char* name() const override { return "SoftTargetCrossEntropyBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const int64_t B = logits.shape()[0], C = logits.shape()[1];
    Tensor dx, dt;
    if (needs_grad(0)) dx = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
    if (needs_grad(1)) dt = Tensor::empty(target.shape(), target.dtype(), target.device());
    kernels::cpu::soft_target_cross_entropy_backward(
        logits.dtype(), dx.defined() ? dx.raw_data() : nullptr, dt.defined() ? dt.raw_data() : nullptr,
        logits.raw_data(), target.raw_data(), lse.raw_data(), B, C, g.item() / static_cast<double>(B));
    return {dx, dt};
  }
  void release() override { logits = target = lse = Tensor(); }
};

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }

Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  require_cpu("layer_norm", {&x, &weight, &bias});
  VT_CHECK(x.dim() >= 1, "[layer_norm] input must have at least one dim, got ", x.describe());
  VT_CHECK(eps >= 0, "[layer_norm] eps must be >= 0, got ", eps);
  const int64_t C = x.shape().back();
  VT_CHECK(C > 0, "[layer_norm] last dim is empty: ", x.describe());
  check_affine(weight, "weight", x, C);
  check_affine(bias, "bias", x, C);
  const int64_t rows = x.numel() / C;
  Tensor xc = x.detach().contiguous();
  Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({rows}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device());
  kernels::cpu::layer_norm_forward(x.dtype(), y.raw_data(), mean.raw_data(), rstd.raw_data(), xc.raw_data(),
                                   w.defined() ? w.raw_data() : nullptr, b.defined() ? b.raw_data() : nullptr, rows,
                                   C, eps);
  if (any_requires_grad({&x, &weight, &bias})) {
    auto node = std::make_shared<LayerNormBackward>();
    node->x = xc;
    node->weight = w;
    node->mean = mean;
    node->rstd = rstd;
    node->rows = rows;
    node->C = C;
    attach_node(y, node, {&x, &weight, &bias});
  }
  return y;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing) {
  require_cpu("cross_entropy", {&logits, &target});
  check_logits(logits, "cross_entropy");
  const int64_t B = logits.shape()[0], C = logits.shape()[1];
  VT_CHECK(target.dtype() == DType::i64, "[cross_entropy] target must be i64 class indices, got ",
           target.describe());
  VT_CHECK(target.shape() == Shape{B}, "[cross_entropy] target must be [", B, "] for logits ", logits.describe(),
           ", got ", target.describe());
  VT_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "[cross_entropy] label_smoothing must be in [0, 1], got ",
           label_smoothing);
  Tensor lc = logits.detach().contiguous();
  Tensor tc = target.detach().contiguous();
  const int64_t* t = tc.data<int64_t>();
  for (int64_t b = 0; b < B; ++b)
    VT_CHECK(t[b] >= 0 && t[b] < C, "[cross_entropy] target[", b, "] = ", t[b], " is out of range for ", C,
             " classes");
  Tensor lse = Tensor::empty({B}, logits.dtype(), logits.device());
  const double total =
      kernels::cpu::cross_entropy_forward(logits.dtype(), lse.raw_data(), lc.raw_data(), t, B, C, label_smoothing);
  Tensor out = Tensor::full({}, total / static_cast<double>(B), logits.dtype(), logits.device());
  if (any_requires_grad({&logits})) {
    auto node = std::make_shared<CrossEntropyBackward>();
    node->logits = lc;
    node->target = tc;
    node->lse = lse;
    node->smoothing = label_smoothing;
    attach_node(out, node, {&logits, &target});
  }
  return out;
}

Tensor soft_target_cross_entropy(const Tensor& logits, const Tensor& target) {
  require_cpu("soft_target_cross_entropy", {&logits, &target});
  check_logits(logits, "soft_target_cross_entropy");
  VT_CHECK(target.shape() == logits.shape() && target.dtype() == logits.dtype(),
           "[soft_target_cross_entropy] target must match logits ", logits.describe(), ", got ", target.describe());
  const int64_t B = logits.shape()[0], C = logits.shape()[1];
  Tensor lc = logits.detach().contiguous();
  Tensor tc = target.detach().contiguous();
  Tensor lse = Tensor::empty({B}, logits.dtype(), logits.device());
  const double total = kernels::cpu::soft_target_cross_entropy_forward(logits.dtype(), lse.raw_data(),
                                                                       lc.raw_data(), tc.raw_data(), B, C);
  Tensor out = Tensor::full({}, total / static_cast<double>(B), logits.dtype(), logits.device());
  if (any_requires_grad({&logits, &target})) {
    auto node = std::make_shared<SoftTargetCrossEntropyBackward>();
    node->logits = lc;
    node->target = tc;
    node->lse = lse;
    attach_node(out, node, {&logits, &target});
  }
  return out;
}

}  // namespace vt::ops
