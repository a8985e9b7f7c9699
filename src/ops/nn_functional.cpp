// Front-ends of the fused NN ops (softmax, log_softmax, layer_norm, cross-entropy losses, l2_normalize) and their
// backward nodes. Each forward saves what its fused backward kernel needs: softmax its output, layer_norm the row
// mean/rstd, the losses the row (or pixel) log-sum-exp, l2_normalize the row norm. CPU tensors run kernels/cpu (f32/f64); CUDA tensors run
// kernels/cuda (f32/bf16 storage, f32 statistics, see the mixed-precision notes in nn_functional.h).
#include "ops/nn_functional.h"

#include "autograd/node.h"
#include "kernels/cpu/l2_normalize.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/pixel_cross_entropy.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cuda/l2_normalize.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/pixel_cross_entropy.h"
#include "kernels/cuda/softmax.h"
#include "kernels/dispatch.h"
#include "ops/elementwise.h"

namespace vt::ops {

namespace {

void* ptr_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

// ---------------------------------------------------------------- softmax / log_softmax

struct SoftmaxBackward : Node {
  bool log = false;
  Tensor y;  // the forward output, detached
  int64_t outer = 1, R = 1, inner = 1;
  const char* name() const override { return log ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gc = (g.dtype() == y.dtype() ? g : g.to(y.dtype())).contiguous();
    Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
    kernels::dispatch(
        y.device(),
        [&] {
          kernels::cpu::softmax_backward(y.dtype(), dx.raw_data(), gc.raw_data(), y.raw_data(), outer, R, inner, log);
        },
        [&](kernels::Cuda c) {
          kernels::cuda::softmax_backward(y.dtype(), dx.raw_data(), gc.raw_data(), y.raw_data(), outer, R, inner, log,
                                          c.stream);
        });
    return {dx};
  }
  void release() override { y = Tensor(); }
};

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  const Device dev = common_device(op, {&x});
  dim = wrap_dim(dim, x.dim(), op);
  Tensor xc = x.detach().contiguous();
  int64_t outer = 1, R = 1, inner = 1;
  for (int64_t i = 0; i < x.dim(); ++i) {
    const int64_t s = x.shape()[i];
    if (i < dim) outer *= s;
    else if (i == dim) R = s;
    else inner *= s;
  }
  Tensor y = Tensor::empty(x.shape(), x.dtype(), dev);
  if (x.numel() > 0)
    kernels::dispatch(
        dev, [&] { kernels::cpu::softmax_forward(x.dtype(), y.raw_data(), xc.raw_data(), outer, R, inner, log); },
        [&](kernels::Cuda c) {
          kernels::cuda::softmax_forward(x.dtype(), y.raw_data(), xc.raw_data(), outer, R, inner, log, c.stream);
        });
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
  Tensor x, weight, mean, rstd;    // x contiguous; weight undefined when absent
  DType param_dtype = DType::f32;  // of dweight/dbias: x's dtype on the CPU, f32 on CUDA
  int64_t rows = 0, C = 0;
  const char* name() const override { return "LayerNormBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return run(g, Tensor()); }
  // x's pending gradient (the residual branch's in a pre-norm block) is added by the kernel writing dx.
  bool can_fold_pending(size_t input, const Tensor& pending) const override {
    return input == 0 && pending.shape() == x.shape() && pending.dtype() == x.dtype() && pending.device() == x.device();
  }
  std::vector<Tensor> backward_folding(const Tensor& g, size_t input, const Tensor& pending) override {
    VT_ASSERT(can_fold_pending(input, pending));
    return run(g, pending.contiguous());
  }
  // dx (+ dres when defined: contiguous, x's shape and dtype), dweight, dbias.
  std::vector<Tensor> run(const Tensor& g, const Tensor& dres) {
    Tensor gc = g.contiguous();
    Tensor dx, dw, db;
    if (needs_grad(0)) dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    if (needs_grad(1)) dw = Tensor::empty({C}, param_dtype, x.device());
    if (needs_grad(2)) db = Tensor::empty({C}, param_dtype, x.device());
    kernels::dispatch(
        x.device(),
        [&] {
          kernels::cpu::layer_norm_backward(x.dtype(), ptr_or_null(dx), ptr_or_null(dres), ptr_or_null(dw),
                                            ptr_or_null(db), gc.raw_data(), x.raw_data(), mean.raw_data(),
                                            rstd.raw_data(), ptr_or_null(weight), rows, C);
        },
        [&](kernels::Cuda c) {
          Tensor scratch;
          if (dw.defined() || db.defined())
            scratch = Tensor::empty({kernels::cuda::layer_norm_backward_scratch(rows, C)}, DType::f32, x.device());
          kernels::cuda::layer_norm_backward(x.dtype(), gc.dtype(), ptr_or_null(dx), ptr_or_null(dres),
                                             static_cast<float*>(ptr_or_null(dw)), static_cast<float*>(ptr_or_null(db)),
                                             gc.raw_data(), x.raw_data(), mean.data<float>(), rstd.data<float>(),
                                             static_cast<const float*>(ptr_or_null(weight)), rows, C,
                                             static_cast<float*>(ptr_or_null(scratch)), c.stream);
        });
    return {dx, dw, db};
  }
  void release() override { x = weight = mean = rstd = Tensor(); }
};

// LayerNorm's backward node: x (contiguous, detached), the weight (or undefined), the row statistics.
std::shared_ptr<LayerNormBackward> layer_norm_node(const Tensor& x, const Tensor& weight, const Tensor& mean,
                                                   const Tensor& rstd, DType param_dtype) {
  auto node = std::make_shared<LayerNormBackward>();
  node->x = x;
  node->weight = weight;
  node->mean = mean;
  node->rstd = rstd;
  node->param_dtype = param_dtype;
  node->C = x.shape().back();
  node->rows = x.numel() / node->C;
  return node;
}

// Weight and bias are [C]; in x's dtype on the CPU (its kernels have one dtype), f32 on CUDA (f32 parameters).
void check_affine(const Tensor& p, const char* what, const Tensor& x, int64_t C) {
  if (!p.defined()) return;
  VT_CHECK(p.shape() == Shape{C}, "[layer_norm] ", what, " must be [", C, "] for input ", x.describe(), ", got ",
           p.describe());
  const DType want = x.device().is_cuda() ? DType::f32 : x.dtype();
  VT_CHECK(p.dtype() == want, "[layer_norm] ", what, " ", p.describe(), " must be ", dtype_name(want), " for input ",
           x.describe(), " on ", x.device().str());
}

// ---------------------------------------------------------------- losses

void check_logits(const Tensor& logits, const char* op) {
  VT_CHECK(logits.dim() == 2, "[", op, "] logits must be [B, C], got ", logits.describe());
  VT_CHECK(logits.shape()[1] > 0, "[", op, "] logits have no classes: ", logits.describe());
}

// The incoming loss gradient as a contiguous f32 device scalar (the CUDA kernels read it there: no host sync).
Tensor loss_grad_f32(const Tensor& g) { return (g.dtype() == DType::f32 ? g : g.to(DType::f32)).contiguous(); }

struct CrossEntropyBackward : Node {
  Tensor logits, target, lse;
  double smoothing = 0;
  const char* name() const override { return "CrossEntropyBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const int64_t B = logits.shape()[0], C = logits.shape()[1];
    Tensor dx = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
    kernels::dispatch(
        logits.device(),
        [&] {
          kernels::cpu::cross_entropy_backward(logits.dtype(), dx.raw_data(), logits.raw_data(), lse.raw_data(),
                                               target.data<int64_t>(), B, C, smoothing,
                                               g.item() / static_cast<double>(B));
        },
        [&](kernels::Cuda c) {
          Tensor g32 = loss_grad_f32(g);
          kernels::cuda::cross_entropy_backward(logits.dtype(), dx.raw_data(), logits.raw_data(), lse.data<float>(),
                                                target.data<int64_t>(), g32.data<float>(), B, C, smoothing, c.stream);
        });
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
    kernels::dispatch(
        logits.device(),
        [&] {
          kernels::cpu::soft_target_cross_entropy_backward(logits.dtype(), ptr_or_null(dx), ptr_or_null(dt),
                                                           logits.raw_data(), target.raw_data(), lse.raw_data(), B, C,
                                                           g.item() / static_cast<double>(B));
        },
        [&](kernels::Cuda c) {
          Tensor g32 = loss_grad_f32(g);
          kernels::cuda::soft_target_cross_entropy_backward(logits.dtype(), target.dtype(), ptr_or_null(dx),
                                                            ptr_or_null(dt), logits.raw_data(), target.raw_data(),
                                                            lse.data<float>(), g32.data<float>(), B, C, c.stream);
        });
    return {dx, dt};
  }
  void release() override { logits = target = lse = Tensor(); }
};

struct PixelCrossEntropyBackward : Node {
  Tensor logits, target, lse;
  Tensor inv_count;   // CUDA: f32 device scalar 1 / valid pixels (0 when none)
  int64_t count = 0;  // CPU: valid pixels
  kernels::PixelCeShape shape;
  const char* name() const override { return "PixelCrossEntropyBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor dx = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
    if (logits.numel() == 0) return {dx, Tensor()};
    kernels::dispatch(
        logits.device(),
        [&] {
          const double scale = count > 0 ? g.item() / static_cast<double>(count) : 0.0;
          kernels::cpu::pixel_cross_entropy_backward(logits.dtype(), dx.raw_data(), logits.raw_data(), lse.raw_data(),
                                                     target.data<int64_t>(), shape, scale);
        },
        [&](kernels::Cuda c) {
          Tensor g32 = loss_grad_f32(g);
          kernels::cuda::pixel_cross_entropy_backward(logits.dtype(), dx.raw_data(), logits.raw_data(),
                                                      lse.data<float>(), target.data<int64_t>(), g32.data<float>(),
                                                      inv_count.data<float>(), shape, c.stream);
        });
    return {dx, Tensor()};
  }
  void release() override { logits = target = lse = inv_count = Tensor(); }
};

struct L2NormalizeBackward : Node {
  Tensor x, norm;  // x contiguous; norm [rows] (x's dtype on the CPU, f32 on CUDA)
  double eps = 0;
  int64_t rows = 0, C = 0;
  const char* name() const override { return "L2NormalizeBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gc = (g.dtype() == x.dtype() ? g : g.to(x.dtype())).contiguous();
    Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    if (x.numel() == 0) return {dx};
    kernels::dispatch(
        x.device(),
        [&] {
          kernels::cpu::l2_normalize_backward(x.dtype(), dx.raw_data(), gc.raw_data(), x.raw_data(), norm.raw_data(),
                                              rows, C, eps);
        },
        [&](kernels::Cuda c) {
          kernels::cuda::l2_normalize_backward(x.dtype(), dx.raw_data(), gc.raw_data(), x.raw_data(),
                                               norm.data<float>(), rows, C, eps, c.stream);
        });
    return {dx};
  }
  void release() override { x = norm = Tensor(); }
};

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }

Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                  std::optional<DType> out_dtype) {
  const Device dev = common_device("layer_norm", {&x, &weight, &bias});
  VT_CHECK(x.dim() >= 1, "[layer_norm] input must have at least one dim, got ", x.describe());
  VT_CHECK(eps >= 0, "[layer_norm] eps must be >= 0, got ", eps);
  const int64_t C = x.shape().back();
  VT_CHECK(C > 0, "[layer_norm] last dim is empty: ", x.describe());
  check_affine(weight, "weight", x, C);
  check_affine(bias, "bias", x, C);
  const DType y_dtype = out_dtype.value_or(x.dtype());
  const bool cuda = dev.is_cuda();
  const DType stat_dtype = cuda ? DType::f32 : x.dtype();
  const int64_t rows = x.numel() / C;
  Tensor xc = x.detach().contiguous();
  Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  // The CPU kernel writes x's dtype; another output dtype is a differentiable cast after it.
  Tensor y = Tensor::empty(x.shape(), cuda ? y_dtype : x.dtype(), dev);
  Tensor mean = Tensor::empty({rows}, stat_dtype, dev);
  Tensor rstd = Tensor::empty({rows}, stat_dtype, dev);
  kernels::dispatch(
      dev,
      [&] {
        kernels::cpu::layer_norm_forward(x.dtype(), y.raw_data(), mean.raw_data(), rstd.raw_data(), xc.raw_data(),
                                         ptr_or_null(w), ptr_or_null(b), rows, C, eps);
      },
      [&](kernels::Cuda c) {
        kernels::cuda::layer_norm_forward(x.dtype(), y_dtype, y.raw_data(), mean.data<float>(), rstd.data<float>(),
                                          xc.raw_data(), static_cast<const float*>(ptr_or_null(w)),
                                          static_cast<const float*>(ptr_or_null(b)), rows, C, eps, c.stream);
      });
  if (any_requires_grad({&x, &weight, &bias}))
    attach_node(y, layer_norm_node(xc, w, mean, rstd, cuda ? DType::f32 : x.dtype()), {&x, &weight, &bias});
  return y.dtype() == y_dtype ? y : y.to(y_dtype);
}

std::pair<Tensor, Tensor> add_layer_norm(const Tensor& x, const Tensor& y, const Tensor& weight, const Tensor& bias,
                                         double eps, std::optional<DType> out_dtype) {
  const Device dev = common_device("add_layer_norm", {&x, &y, &weight, &bias});
  const bool fusable = dev.is_cuda() && x.dtype() == DType::f32 &&
                       (y.dtype() == DType::f32 || y.dtype() == DType::bf16) && x.dim() >= 1 &&
                       y.shape() == x.shape() && x.is_contiguous() && y.is_contiguous() && x.numel() > 0 && eps >= 0 &&
                       (!weight.defined() || weight.is_contiguous()) && (!bias.defined() || bias.is_contiguous());
  if (fusable) {
    const int64_t C = x.shape().back(), rows = x.numel() / C;
    check_affine(weight, "weight", x, C);
    check_affine(bias, "bias", x, C);
    const DType y_dtype = out_dtype.value_or(x.dtype());
    Tensor h = Tensor::empty(x.shape(), DType::f32, dev), out = Tensor::empty(x.shape(), y_dtype, dev);
    Tensor mean = Tensor::empty({rows}, DType::f32, dev), rstd = Tensor::empty({rows}, DType::f32, dev);
    const bool fused = kernels::on_cuda(dev, [&](kernels::Cuda c) {
      return kernels::cuda::add_layer_norm_forward(
          y.dtype(), y_dtype, h.data<float>(), out.raw_data(), mean.data<float>(), rstd.data<float>(), x.data<float>(),
          y.raw_data(), static_cast<const float*>(ptr_or_null(weight)), static_cast<const float*>(ptr_or_null(bias)),
          rows, C, eps, c.stream);
    });
    if (fused) {
      h = record_add(h, x, y);
      if (any_requires_grad({&h, &weight, &bias}))
        attach_node(out,
                    layer_norm_node(h.detach(), weight.defined() ? weight.detach() : Tensor(), mean, rstd, DType::f32),
                    {&h, &weight, &bias});
      return {h, out};
    }
  }
  Tensor h = add(x, y);
  return {h, layer_norm(h, weight, bias, eps, out_dtype)};
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing) {
  const Device dev = common_device("cross_entropy", {&logits, &target});
  check_logits(logits, "cross_entropy");
  const int64_t B = logits.shape()[0], C = logits.shape()[1];
  VT_CHECK(target.dtype() == DType::i64, "[cross_entropy] target must be i64 class indices, got ", target.describe());
  VT_CHECK(target.shape() == Shape{B}, "[cross_entropy] target must be [", B, "] for logits ", logits.describe(),
           ", got ", target.describe());
  VT_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "[cross_entropy] label_smoothing must be in [0, 1], got ",
           label_smoothing);
  Tensor lc = logits.detach().contiguous();
  Tensor tc = target.detach().contiguous();
  Tensor out, lse;
  kernels::dispatch(
      dev,
      [&] {
        const int64_t* t = tc.data<int64_t>();
        for (int64_t b = 0; b < B; ++b)
          VT_CHECK(t[b] >= 0 && t[b] < C, "[cross_entropy] target[", b, "] = ", t[b], " is out of range for ", C,
                   " classes");
        lse = Tensor::empty({B}, logits.dtype(), dev);
        const double total = kernels::cpu::cross_entropy_forward(logits.dtype(), lse.raw_data(), lc.raw_data(), t, B, C,
                                                                 label_smoothing);
        out = Tensor::full({}, total / static_cast<double>(B), logits.dtype(), dev);
      },
      [&](kernels::Cuda c) {
        VT_CHECK(B > 0, "[cross_entropy] empty batch: ", logits.describe());
        out = Tensor::empty({}, DType::f32, dev);
        lse = Tensor::empty({B}, DType::f32, dev);
        Tensor row_loss = Tensor::empty({B}, DType::f32, dev);
        kernels::cuda::cross_entropy_forward(logits.dtype(), out.data<float>(), lse.data<float>(),
                                             row_loss.data<float>(), lc.raw_data(), tc.data<int64_t>(), B, C,
                                             label_smoothing, c.stream);
      });
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
  const Device dev = common_device("soft_target_cross_entropy", {&logits, &target});
  check_logits(logits, "soft_target_cross_entropy");
  const bool dtype_ok = target.dtype() == logits.dtype() || (dev.is_cuda() && target.dtype() == DType::f32);
  VT_CHECK(target.shape() == logits.shape() && dtype_ok, "[soft_target_cross_entropy] target must match logits ",
           logits.describe(), dev.is_cuda() ? " (or be f32)" : "", ", got ", target.describe());
  const int64_t B = logits.shape()[0], C = logits.shape()[1];
  Tensor lc = logits.detach().contiguous();
  Tensor tc = target.detach().contiguous();
  Tensor out, lse;
  kernels::dispatch(
      dev,
      [&] {
        lse = Tensor::empty({B}, logits.dtype(), dev);
        const double total = kernels::cpu::soft_target_cross_entropy_forward(logits.dtype(), lse.raw_data(),
                                                                             lc.raw_data(), tc.raw_data(), B, C);
        out = Tensor::full({}, total / static_cast<double>(B), logits.dtype(), dev);
      },
      [&](kernels::Cuda c) {
        VT_CHECK(B > 0, "[soft_target_cross_entropy] empty batch: ", logits.describe());
        out = Tensor::empty({}, DType::f32, dev);
        lse = Tensor::empty({B}, DType::f32, dev);
        Tensor row_loss = Tensor::empty({B}, DType::f32, dev);
        kernels::cuda::soft_target_cross_entropy_forward(logits.dtype(), target.dtype(), out.data<float>(),
                                                         lse.data<float>(), row_loss.data<float>(), lc.raw_data(),
                                                         tc.raw_data(), B, C, c.stream);
      });
  if (any_requires_grad({&logits, &target})) {
    auto node = std::make_shared<SoftTargetCrossEntropyBackward>();
    node->logits = lc;
    node->target = tc;
    node->lse = lse;
    attach_node(out, node, {&logits, &target});
  }
  return out;
}

Tensor pixel_cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index) {
  const Device dev = common_device("pixel_cross_entropy", {&logits, &target});
  VT_CHECK(logits.dim() == 4, "[pixel_cross_entropy] logits must be [B, K, H, W], got ", logits.describe());
  const int64_t B = logits.size(0), K = logits.size(1), H = logits.size(2), W = logits.size(3);
  VT_CHECK(K > 0, "[pixel_cross_entropy] logits have no classes: ", logits.describe());
  VT_CHECK(target.dtype() == DType::i64, "[pixel_cross_entropy] target must be i64 class indices, got ",
           target.describe());
  VT_CHECK(target.shape() == Shape({B, H, W}), "[pixel_cross_entropy] target must be [", B, ", ", H, ", ", W,
           "] for logits ", logits.describe(), ", got ", target.describe());
  const kernels::PixelCeShape shape{B, K, H * W, ignore_index};
  Tensor lc = logits.detach().contiguous();
  Tensor tc = target.detach().contiguous();
  Tensor out, lse, inv_count;
  int64_t count = 0;
  kernels::dispatch(
      dev,
      [&] {
        const int64_t* t = tc.data<int64_t>();
        for (int64_t i = 0; i < tc.numel(); ++i)
          VT_CHECK(t[i] == ignore_index || (t[i] >= 0 && t[i] < K), "[pixel_cross_entropy] target element ", i, " = ",
                   t[i], " is out of range for ", K, " classes (ignore_index ", ignore_index, ")");
        lse = Tensor::empty({B, H, W}, logits.dtype(), dev);
        const kernels::cpu::PixelCeSum sum =
            kernels::cpu::pixel_cross_entropy_forward(logits.dtype(), lse.raw_data(), lc.raw_data(), t, shape);
        count = sum.count;
        out = Tensor::full({}, count > 0 ? sum.total / static_cast<double>(count) : 0.0, logits.dtype(), dev);
      },
      [&](kernels::Cuda c) {
        VT_CHECK(logits.dtype() == DType::f32 || logits.dtype() == DType::bf16,
                 "[pixel_cross_entropy] CUDA logits must be f32 or bf16, got ", logits.describe());
        // The kernels write both scalars; with no pixels at all the loss is 0.
        const bool empty = logits.numel() == 0;
        out = empty ? Tensor::zeros({}, DType::f32, dev) : Tensor::empty({}, DType::f32, dev);
        inv_count = empty ? Tensor::zeros({}, DType::f32, dev) : Tensor::empty({}, DType::f32, dev);
        lse = Tensor::empty({B, H, W}, DType::f32, dev);
        if (!empty) {
          Tensor scratch = Tensor::empty({kernels::cuda::pixel_cross_entropy_scratch(shape)}, DType::f32, dev);
          kernels::cuda::pixel_cross_entropy_forward(logits.dtype(), out.data<float>(), inv_count.data<float>(),
                                                     lse.data<float>(), lc.raw_data(), tc.data<int64_t>(), shape,
                                                     scratch.data<float>(), c.stream);
        }
      });
  if (any_requires_grad({&logits})) {
    auto node = std::make_shared<PixelCrossEntropyBackward>();
    node->logits = lc;
    node->target = tc;
    node->lse = lse;
    node->inv_count = inv_count;
    node->count = count;
    node->shape = shape;
    attach_node(out, node, {&logits, &target});
  }
  return out;
}

Tensor l2_normalize(const Tensor& x, double eps) {
  const Device dev = common_device("l2_normalize", {&x});
  VT_CHECK(x.dim() >= 1, "[l2_normalize] input must have at least one dim, got ", x.describe());
  VT_CHECK(eps >= 0, "[l2_normalize] eps must be >= 0, got ", eps);
  const int64_t C = x.shape().back();
  const int64_t rows = C > 0 ? x.numel() / C : 0;
  const bool cuda = dev.is_cuda();
  Tensor xc = x.detach().contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), dev);
  Tensor norm = Tensor::empty({rows}, cuda ? DType::f32 : x.dtype(), dev);
  if (x.numel() > 0) {
    kernels::dispatch(
        dev,
        [&] {
          kernels::cpu::l2_normalize_forward(x.dtype(), y.raw_data(), norm.raw_data(), xc.raw_data(), rows, C, eps);
        },
        [&](kernels::Cuda c) {
          kernels::cuda::l2_normalize_forward(x.dtype(), y.raw_data(), norm.data<float>(), xc.raw_data(), rows, C, eps,
                                              c.stream);
        });
  }
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<L2NormalizeBackward>();
    node->x = xc;
    node->norm = norm;
    node->eps = eps;
    node->rows = rows;
    node->C = C;
    attach_node(y, node, {&x});
  }
  return y;
}

}  // namespace vt::ops
