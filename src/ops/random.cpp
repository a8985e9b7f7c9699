// Front-ends of the random fills and the stochastic regularisers (dropout, drop_path). Every draw takes its
// counters from the generator with reserve(), so a draw is reproducible from (seed, offset) alone.
#include "ops/random.h"

#include <string>

#include "autograd/node.h"
#include "kernels/cpu/random.h"
#include "kernels/cuda/random.h"
#include "kernels/dispatch.h"

namespace vt::ops {

namespace {

// Fills whose offsets would be baked into a captured CUDA graph (the same numbers at every replay) refuse to be
// captured.
void refuse_capture(const char* op, kernels::Cuda c) {
  kernels::cuda::fail_if_capturing(c.stream, std::string(op) + " (its draws would repeat at every CUDA graph replay)");
}

// Runs fill(dtype, data, n, device) on t directly when it is contiguous in a dtype the device's kernels write
// (CPU: f32/f64; CUDA: f32/f64/bf16), else through a contiguous temporary (f64 for f64, f32 otherwise) copied
// back, so element i is always the i-th in row-major order and a CUDA bf16 fill equals the CPU's f32 -> bf16.
template <typename F>
void fill_tensor(const Tensor& t, const char* op, F&& fill) {
  const Device dev = common_device(op, {&t});
  VT_CHECK(is_floating(t.dtype()), "[", op, "] needs a floating tensor, got ", t.describe());
  const bool direct = t.is_contiguous() && (t.dtype() == DType::f32 || t.dtype() == DType::f64 ||
                                            (dev.is_cuda() && t.dtype() == DType::bf16));
  if (direct) {
    fill(t.dtype(), t.raw_data(), t.numel(), dev);
    return;
  }
  Tensor tmp = Tensor::empty(t.shape(), t.dtype() == DType::f64 ? DType::f64 : DType::f32, dev);
  fill(tmp.dtype(), tmp.raw_data(), tmp.numel(), dev);
  t.copy_(tmp);
}

void check_drop_prob(double p, const char* op) { VT_CHECK(p >= 0 && p < 1, "[", op, "] p must be in [0, 1), got ", p); }

// Backward of dropout and drop_path: dx = dy·mask·scale, the mask broadcast over `inner` trailing elements.
struct MaskScaleBackward : Node {
  const char* op_name = "DropoutBackward";
  Tensor mask;  // u8, [rows]
  double scale = 1;
  int64_t rows = 0, inner = 1;
  const char* name() const override { return op_name; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gc = g.contiguous();
    Tensor dx = Tensor::empty(gc.shape(), gc.dtype(), gc.device());
    kernels::dispatch(
        gc.device(),
        [&] {
          kernels::cpu::masked_scale(gc.dtype(), dx.raw_data(), gc.raw_data(), mask.data<uint8_t>(), rows, inner,
                                     scale);
        },
        [&](kernels::Cuda c) {
          kernels::cuda::masked_scale(gc.dtype(), dx.raw_data(), gc.raw_data(), mask.data<uint8_t>(), rows, inner,
                                      scale, c.stream);
        });
    return {dx};
  }
  void release() override { mask = Tensor(); }
};

// y = x·mask[r]·scale over (rows, inner); mask[r] = 1 with probability 1 − p.
Tensor masked_drop(const Tensor& x, double p, int64_t rows, int64_t inner, Generator& gen, const char* op,
                   const char* node_name) {
  const Device dev = common_device(op, {&x});
  const bool bf16_ok = dev.is_cuda() && x.dtype() == DType::bf16;
  VT_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64 || bf16_ok, "[", op, "] needs f32 or f64",
           dev.is_cuda() ? " or bf16" : "", ", got ", x.describe());
  Tensor mask = Tensor::empty({rows}, DType::u8, dev);
  const uint64_t seed = gen.seed(), offset = gen.reserve(static_cast<uint64_t>(rows));
  const double keep = 1.0 - p, scale = 1.0 / (1.0 - p);
  Tensor xc = x.detach().contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), dev);
  kernels::dispatch(
      dev,
      [&] {
        kernels::cpu::bernoulli_fill(mask.data<uint8_t>(), rows, seed, offset, keep);
        kernels::cpu::masked_scale(x.dtype(), y.raw_data(), xc.raw_data(), mask.data<uint8_t>(), rows, inner, scale);
      },
      [&](kernels::Cuda c) {
        if (!gen.device_shift()) refuse_capture(op, c);
        kernels::cuda::dropout_forward(x.dtype(), y.raw_data(), mask.data<uint8_t>(), xc.raw_data(), rows, inner, seed,
                                       offset, gen.device_shift(), keep, scale, c.stream);
      });
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<MaskScaleBackward>();
    node->op_name = node_name;
    node->mask = mask;
    node->scale = scale;
    node->rows = rows;
    node->inner = inner;
    attach_node(y, node, {&x});
  }
  return y;
}

}  // namespace

void uniform_(const Tensor& t, double lo, double hi, Generator& gen) {
  VT_CHECK(lo <= hi, "[uniform_] needs lo <= hi, got [", lo, ", ", hi, ")");
  fill_tensor(t, "uniform_", [&](DType dt, void* p, int64_t n, Device dev) {
    const uint64_t seed = gen.seed(), offset = gen.reserve(static_cast<uint64_t>(n));
    kernels::dispatch(
        dev, [&] { kernels::cpu::uniform_fill(dt, p, n, seed, offset, lo, hi); },
        [&](kernels::Cuda c) {
          refuse_capture("uniform_", c);
          kernels::cuda::uniform_fill(dt, p, n, seed, offset, lo, hi, c.stream);
        });
  });
}

void normal_(const Tensor& t, double mean, double std, Generator& gen) {
  VT_CHECK(std >= 0, "[normal_] std must be >= 0, got ", std);
  fill_tensor(t, "normal_", [&](DType dt, void* p, int64_t n, Device dev) {
    // Box-Muller pairs: an odd n still reads uniform n, so reserve one more.
    const uint64_t seed = gen.seed(), offset = gen.reserve(static_cast<uint64_t>(n) + 1);
    kernels::dispatch(
        dev, [&] { kernels::cpu::normal_fill(dt, p, n, seed, offset, mean, std); },
        [&](kernels::Cuda c) {
          refuse_capture("normal_", c);
          kernels::cuda::normal_fill(dt, p, n, seed, offset, mean, std, c.stream);
        });
  });
}

void trunc_normal_(const Tensor& t, double mean, double std, double a, double b, Generator& gen) {
  VT_CHECK(std > 0, "[trunc_normal_] std must be > 0, got ", std);
  VT_CHECK(a < b, "[trunc_normal_] needs a < b, got [", a, ", ", b, "]");
  fill_tensor(t, "trunc_normal_", [&](DType dt, void* p, int64_t n, Device dev) {
    const uint64_t seed = gen.seed(), offset = gen.reserve(static_cast<uint64_t>(n));
    kernels::dispatch(
        dev, [&] { kernels::cpu::trunc_normal_fill(dt, p, n, seed, offset, mean, std, a, b); },
        [&](kernels::Cuda c) {
          refuse_capture("trunc_normal_", c);
          kernels::cuda::trunc_normal_fill(dt, p, n, seed, offset, mean, std, a, b, c.stream);
        });
  });
}

Tensor bernoulli(const Shape& shape, double p, Generator& gen, Device device) {
  VT_CHECK(p >= 0 && p <= 1, "[bernoulli] p must be in [0, 1], got ", p);
  Tensor out = Tensor::empty(shape, DType::u8, device);
  const int64_t n = out.numel();
  const uint64_t seed = gen.seed(), offset = gen.reserve(static_cast<uint64_t>(n));
  kernels::dispatch(
      device, [&] { kernels::cpu::bernoulli_fill(out.data<uint8_t>(), n, seed, offset, p); },
      [&](kernels::Cuda c) {
        if (!gen.device_shift()) refuse_capture("bernoulli", c);
        kernels::cuda::bernoulli_fill(out.data<uint8_t>(), n, seed, offset, gen.device_shift(), p, c.stream);
      });
  return out;
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  check_drop_prob(p, "dropout");
  if (!training || p == 0) return x;
  return masked_drop(x, p, x.numel(), 1, gen, "dropout", "DropoutBackward");
}

Tensor drop_path(const Tensor& x, double p, bool training, Generator& gen) {
  check_drop_prob(p, "drop_path");
  if (!training || p == 0) return x;
  VT_CHECK(x.dim() >= 1, "[drop_path] needs a batch dim, got ", x.describe());
  const int64_t B = x.shape()[0];
  return masked_drop(x, p, B, B > 0 ? x.numel() / B : 0, gen, "drop_path", "DropPathBackward");
}

}  // namespace vt::ops
