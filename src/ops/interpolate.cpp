// Front-end of bilinear resizing: checks, a contiguous input, the kernel call (kernels/cpu or kernels/cuda
// interpolate), and the backward node, which applies the kernels' adjoint to the output gradient.
#include "ops/interpolate.h"

#include "autograd/node.h"
#include "kernels/cpu/interpolate.h"
#include "kernels/cuda/interpolate.h"
#include "kernels/dispatch.h"

namespace vt::ops {

namespace {

struct InterpolateBilinearBackward : Node {
  kernels::BilinearShape shape;
  Shape x_shape;
  DType dtype = DType::f32;
  const char* name() const override { return "InterpolateBilinearBackward"; }
  std::vector<Tensor> backward(const Tensor& grad) override {
    Tensor g = (grad.dtype() == dtype ? grad : grad.to(dtype)).contiguous();
    const Device dev = g.device();
    Tensor dx = Tensor::empty(x_shape, dtype, dev);
    if (shape.planes == 0) return {dx};
    kernels::dispatch(
        dev, [&] { kernels::cpu::bilinear_backward(dtype, dx.raw_data(), g.raw_data(), shape); },
        [&](kernels::Cuda c) {
          kernels::cuda::bilinear_backward(dtype, dx.raw_data(), g.raw_data(), shape, c.stream);
        });
    return {dx};
  }
};

}  // namespace

Tensor interpolate_bilinear(const Tensor& x, int64_t out_h, int64_t out_w) {
  VT_CHECK(x.defined() && x.dim() == 4, "[interpolate_bilinear] x must be [B, C, H, W], got ",
           x.defined() ? x.describe() : std::string("an undefined tensor"));
  VT_CHECK(out_h > 0 && out_w > 0, "[interpolate_bilinear] output size must be positive, got ", out_h, "x", out_w);
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  VT_CHECK(H > 0 && W > 0, "[interpolate_bilinear] input has an empty spatial dim: ", x.describe());
  const Device dev = common_device("interpolate_bilinear", {&x});
  const DType dt = x.dtype();
  check_device_float(x, "interpolate_bilinear");
  const kernels::BilinearShape s{B * C, H, W, out_h, out_w};
  Tensor xc = x.detach().contiguous();
  Tensor out = Tensor::empty({B, C, out_h, out_w}, dt, dev);
  if (s.planes > 0) {
    kernels::dispatch(
        dev, [&] { kernels::cpu::bilinear_forward(dt, out.raw_data(), xc.raw_data(), s); },
        [&](kernels::Cuda c) { kernels::cuda::bilinear_forward(dt, out.raw_data(), xc.raw_data(), s, c.stream); });
  }
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<InterpolateBilinearBackward>();
    node->shape = s;
    node->x_shape = x.shape();
    node->dtype = dt;
    attach_node(out, node, {&x});
  }
  return out;
}

}  // namespace vt::ops
