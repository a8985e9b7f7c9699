// Front-ends of the fused NN ops (softmax, log_softmax, layer_norm, cross-entropy losses) and their backward
// nodes. Each forward saves what its fused backward kernel needs: softmax its output, layer_norm the row
// mean/rstd, the losses the row log-sum-exp. CPU tensors run kernels/cpu (f32/f64); CUDA tensors run
// kernels/cuda (f32/bf16 storage, f32 statistics, see the mixed-precision notes in nn_functional.h).
#include "ops/nn_functional.h"

#include "autograd/node.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/softmax.h"

#ifdef VT_WITH_CUDA
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/softmax.h"
#include "kernels/cuda/stream.h"
#endif

namespace vt::ops {

namespace {

#ifdef VT_WITH_CUDA
// The device made current and its current stream, for one CUDA kernel call.
struct CudaScope {
  explicit CudaScope(Device dev) : guard(dev.index), stream(kernels::cuda::current_stream()) {}
  kernels::cuda::DeviceGuard guard;
  cudaStream_t stream;
};
#endif

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
    if (y.device().is_cuda()) {
#ifdef VT_WITH_CUDA
      CudaScope s(y.device());
      kernels::cuda::softmax_backward(y.dtype(), dx.raw_data(), gc.raw_data(), y.raw_data(), outer, R, inner, log,
                                      s.stream);
#else
      fail_without_cuda(name(), y.device());
#endif
    } else {
      kernels::cpu::softmax_backward(y.dtype(), dx.raw_data(), gc.raw_data(), y.raw_data(), outer, R, inner, log);
    }
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
  if (x.numel() > 0 && dev.is_cuda()) {
#ifdef VT_WITH_CUDA
    CudaScope s(dev);
    kernels::cuda::softmax_forward(x.dtype(), y.raw_data(), xc.raw_data(), outer, R, inner, log, s.stream);
#else
    fail_without_cuda(op, dev);
#endif
  } else if (x.numel() > 0) {
    kernels::cpu::softmax_forward(x.dtype(), y.raw_data(), xc.raw_data(), outer, R, inner, log);
  }
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
  DType param_dtype = DType::f32;  // of dweight/dbias: x's dtype on the CPU, f32 on CUDA
  int64_t rows = 0, C = 0;
  const char* name() const override { return "LayerNormBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gc = g.contiguous();
    Tensor dx, dw, db;
    if (needs_grad(0)) dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    if (needs_grad(1)) dw = Tensor::empty({C}, param_dtype, x.device());
    if (needs_grad(2)) db = Tensor::empty({C}, param_dtype, x.device());
    if (x.device().is_cuda()) {
#ifdef VT_WITH_CUDA
      Tensor scratch;
      if (dw.defined() || db.defined())
        scratch = Tensor::empty({kernels::cuda::layer_norm_backward_scratch(rows, C)}, DType::f32, x.device());
      CudaScope s(x.device());
      kernels::cuda::layer_norm_backward(x.dtype(), gc.dtype(), ptr_or_null(dx), static_cast<float*>(ptr_or_null(dw)),
                                         static_cast<float*>(ptr_or_null(db)), gc.raw_data(), x.raw_data(),
                                         mean.data<float>(), rstd.data<float>(),
                                         static_cast<const float*>(ptr_or_null(weight)), rows, C,
                                         static_cast<float*>(ptr_or_null(scratch)), s.stream);
#else
      fail_without_cuda(name(), x.device());
#endif
    } else {
      kernels::cpu::layer_norm_backward(x.dtype(), ptr_or_null(dx), ptr_or_null(dw), ptr_or_null(db), gc.raw_data(),
                                        x.raw_data(), mean.raw_data(), rstd.raw_data(), ptr_or_null(weight), rows,
                                        C);
    }
    return {dx, dw, db};
  }
  void release() override { x = weight = mean = rstd = Tensor(); }
};

// Weight and bias are [C]; in x's dtype on the CPU (its kernels have one dtype), f32 on CUDA (f32 parameters).
void check_affine(const Tensor& p, const char* what, const Tensor& x, int64_t C) {
  if (!p.defined()) return;
  VT_CHECK(p.shape() == Shape{C}, "[layer_norm] ", what, " must be [", C, "] for input ", x.describe(), ", got ",
           p.describe());
  const DType want = x.device().is_cuda() ? DType::f32 : x.dtype();
  VT_CHECK(p.dtype() == want, "[layer_norm] ", what, " ", p.describe(), " must be ", dtype_name(want),
           " for input ", x.describe(), " on ", x.device().str());
}

// ---------------------------------------------------------------- losses

void check_logits(const Tensor& logits, const char* op) {
  VT_CHECK(logits.dim() == 2, "[", op, "] logits must be [B, C], got ", logits.describe());
  VT_CHECK(logits.shape()[1] > 0, "[", op, "] logits have no classes: ", logits.describe());
}

#ifdef VT_WITH_CUDA
// The incoming loss gradient as a contiguous f32 device scalar (the CUDA kernels read it there: no host sync).
Tensor loss_grad_f32(const Tensor& g) { return (g.dtype() == DType::f32 ? g : g.to(DType::f32)).contiguous(); }
#endif

struct CrossEntropyBackward : Node {
  Tensor logits, target, lse;
  double smoothing = 0;
  const char* name() const override { return "CrossEntropyBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const int64_t B = logits.shape()[0], C = logits.shape()[1];
    Tensor dx = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
    if (logits.device().is_cuda()) {
#ifdef VT_WITH_CUDA
      Tensor g32 = loss_grad_f32(g);
      CudaScope s(logits.device());
      kernels::cuda::cross_entropy_backward(logits.dtype(), dx.raw_data(), logits.raw_data(), lse.data<float>(),
                                            target.data<int64_t>(), g32.data<float>(), B, C, smoothing, s.stream);
#else
      fail_without_cuda(name(), logits.device());
#endif
    } else {
      kernels::cpu::cross_entropy_backward(logits.dtype(), dx.raw_data(), logits.raw_data(), lse.raw_data(),
                                           target.data<int64_t>(), B, C, smoothing,
                                           g.item() / static_cast<double>(B));
    }
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
    if (logits.device().is_cuda()) {
#ifdef VT_WITH_CUDA
      Tensor g32 = loss_grad_f32(g);
      CudaScope s(logits.device());
      kernels::cuda::soft_target_cross_entropy_backward(logits.dtype(), target.dtype(), ptr_or_null(dx),
                                                        ptr_or_null(dt), logits.raw_data(), target.raw_data(),
                                                        lse.data<float>(), g32.data<float>(), B, C, s.stream);
#else
      fail_without_cuda(name(), logits.device());
#endif
    } else {
      kernels::cpu::soft_target_cross_entropy_backward(logits.dtype(), ptr_or_null(dx), ptr_or_null(dt),
                                                       logits.raw_data(), target.raw_data(), lse.raw_data(), B, C,
                                                       g.item() / static_cast<double>(B));
    }
    return {dx, dt};
  }
  void release() override { logits = target = lse = Tensor(); }
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
  if (cuda) {
#ifdef VT_WITH_CUDA
    CudaScope s(dev);
    kernels::cuda::layer_norm_forward(x.dtype(), y_dtype, y.raw_data(), mean.data<float>(), rstd.data<float>(),
                                      xc.raw_data(), static_cast<const float*>(ptr_or_null(w)),
                                      static_cast<const float*>(ptr_or_null(b)), rows, C, eps, s.stream);
#else
    fail_without_cuda("layer_norm", dev);
#endif
  } else {
    kernels::cpu::layer_norm_forward(x.dtype(), y.raw_data(), mean.raw_data(), rstd.raw_data(), xc.raw_data(),
                                     ptr_or_null(w), ptr_or_null(b), rows, C, eps);
  }
  if (any_requires_grad({&x, &weight, &bias})) {
    auto node = std::make_shared<LayerNormBackward>();
    node->x = xc;
    node->weight = w;
    node->mean = mean;
    node->rstd = rstd;
    node->param_dtype = cuda ? DType::f32 : x.dtype();
    node->rows = rows;
    node->C = C;
    attach_node(y, node, {&x, &weight, &bias});
  }
  return y.dtype() == y_dtype ? y : y.to(y_dtype);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing) {
  const Device dev = common_device("cross_entropy", {&logits, &target});
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
  Tensor out, lse;
  if (dev.is_cuda()) {
#ifdef VT_WITH_CUDA
    VT_CHECK(B > 0, "[cross_entropy] empty batch: ", logits.describe());
    out = Tensor::empty({}, DType::f32, dev);
    lse = Tensor::empty({B}, DType::f32, dev);
    Tensor row_loss = Tensor::empty({B}, DType::f32, dev);
    CudaScope s(dev);
    kernels::cuda::cross_entropy_forward(logits.dtype(), out.data<float>(), lse.data<float>(), row_loss.data<float>(),
                                         lc.raw_data(), tc.data<int64_t>(), B, C, label_smoothing, s.stream);
#else
    fail_without_cuda("cross_entropy", dev);
#endif
  } else {
    const int64_t* t = tc.data<int64_t>();
    for (int64_t b = 0; b < B; ++b)
      VT_CHECK(t[b] >= 0 && t[b] < C, "[cross_entropy] target[", b, "] = ", t[b], " is out of range for ", C,
               " classes");
    lse = Tensor::empty({B}, logits.dtype(), dev);
    const double total =
        kernels::cpu::cross_entropy_forward(logits.dtype(), lse.raw_data(), lc.raw_data(), t, B, C, label_smoothing);
    out = Tensor::full({}, total / static_cast<double>(B), logits.dtype(), dev);
  }
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
  const bool dtype_ok =
      target.dtype() == logits.dtype() || (dev.is_cuda() && target.dtype() == DType::f32);
  VT_CHECK(target.shape() == logits.shape() && dtype_ok, "[soft_target_cross_entropy] target must match logits ",
           logits.describe(), dev.is_cuda() ? " (or be f32)" : "", ", got ", target.describe());
  const int64_t B = logits.shape()[0], C = logits.shape()[1];
  Tensor lc = logits.detach().contiguous();
  Tensor tc = target.detach().contiguous();
  Tensor out, lse;
  if (dev.is_cuda()) {
#ifdef VT_WITH_CUDA
    VT_CHECK(B > 0, "[soft_target_cross_entropy] empty batch: ", logits.describe());
    out = Tensor::empty({}, DType::f32, dev);
    lse = Tensor::empty({B}, DType::f32, dev);
    Tensor row_loss = Tensor::empty({B}, DType::f32, dev);
    CudaScope s(dev);
    kernels::cuda::soft_target_cross_entropy_forward(logits.dtype(), target.dtype(), out.data<float>(),
                                                     lse.data<float>(), row_loss.data<float>(), lc.raw_data(),
                                                     tc.raw_data(), B, C, s.stream);
#else
    fail_without_cuda("soft_target_cross_entropy", dev);
#endif
  } else {
    lse = Tensor::empty({B}, logits.dtype(), dev);
    const double total = kernels::cpu::soft_target_cross_entropy_forward(logits.dtype(), lse.raw_data(),
                                                                         lc.raw_data(), tc.raw_data(), B, C);
    out = Tensor::full({}, total / static_cast<double>(B), logits.dtype(), dev);
  }
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
