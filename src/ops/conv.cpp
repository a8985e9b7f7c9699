// Front-ends of the patch-embedding conv, the depth-wise 3×3 conv and adaptive average pooling, with their
// backward nodes. The patch conv is im2col (patches never overlap) followed by GEMMs against the flattened weight.
// On CUDA the im2col is one strided device copy of a view of x, and the GEMMs are those of a Linear layer on the
// patches (ops/matmul.h: bias epilogue forward, fused bias gradient backward).
#include "ops/conv.h"

#include "autograd/node.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/pool.h"
#include "kernels/cuda/conv.h"
#include "kernels/dispatch.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace vt::ops {

namespace {

const void* advance(const void* p, int64_t elems, DType dtype) {
  return static_cast<const char*>(p) + elems * static_cast<int64_t>(dtype_size(dtype));
}

// x [B, C, Gh·p, Gw·p] (any strides) seen as [B, Gh, Gw, C, p, p]: contiguous, this is the im2col matrix
// [B·G, C·p·p] whose row (b, gy, gx) and column (c, ky, kx) match the flattened weight [D, C, p, p].
Tensor patch_view(const Tensor& x, int64_t p) {
  const auto& s = x.strides();
  const int64_t Gh = x.size(2) / p, Gw = x.size(3) / p;
  return make_view(x, {x.size(0), Gh, Gw, x.size(1), p, p}, {s[0], s[2] * p, s[3] * p, s[1], s[2], s[3]}, x.offset());
}

struct Conv2dPatchBackward : Node {
  Tensor cols;    // [B·G, K] patches of the input
  Tensor weight;  // [D, K] contiguous
  int64_t B, C, Gh, Gw, p;
  const char* name() const override { return "Conv2dPatchBackward"; }
  std::vector<Tensor> backward(const Tensor& g_in) override {
    if (g_in.device().is_cuda()) return backward_cuda(g_in);
    const DType dt = g_in.dtype();
    const int64_t D = weight.size(0), K = weight.size(1), G = Gh * Gw;
    Tensor g = g_in.contiguous();  // [B, D, G]
    Tensor gx, gw, gb;
    if (needs_grad(0)) {
      // dcols_b [G, K] = g_bᵀ [G, D] · W [D, K], then scatter the patches back to the image.
      Tensor dcols = Tensor::empty({B * G, K}, dt);
      kernels::cpu::gemm_batched(dt, B, G, K, D, 1.0, {g.raw_data(), true, G, D * G}, {weight.raw_data(), false, K, 0},
                                 0.0, dcols.raw_data(), K, G * K);
      gx = Tensor::empty({B, C, Gh * p, Gw * p}, dt);
      kernels::cpu::col2im_patch(dt, gx.raw_data(), dcols.raw_data(), B, C, Gh, Gw, p);
    }
    if (needs_grad(1)) {
      // dW [D, K] = Σ_b g_b [D, G] · cols_b [G, K], accumulated by beta = 1 after the first item.
      gw = Tensor::empty({D, K}, dt);
      for (int64_t b = 0; b < B; ++b)
        kernels::cpu::gemm_batched(dt, 1, D, K, G, 1.0, {advance(g.raw_data(), b * D * G, dt), false, G, 0},
                                   {advance(cols.raw_data(), b * G * K, dt), false, K, 0}, b == 0 ? 0.0 : 1.0,
                                   gw.raw_data(), K, 0);
      if (B == 0) gw.fill_(0.0);
      gw = gw.reshape({D, C, p, p});
    }
    if (needs_grad(2)) gb = sum(g, {0, 2, 3});
    return {gx, gw, gb};
  }
  // The Linear backward on the patches: g [B, D, Gh, Gw] → rows [B·G, D]; dcols goes back through patch_view.
  std::vector<Tensor> backward_cuda(const Tensor& g_in) {
    const int64_t D = weight.size(0), C_ = C, G = Gh * Gw;
    Tensor g2 = g_in.permute({0, 2, 3, 1}).contiguous().reshape({B * G, D});
    Tensor dcols, gx, gw, gb;
    detail::linear_2d_backward_cuda(g2, cols, weight, needs_grad(0), needs_grad(1), needs_grad(2), dcols, gw, gb);
    if (dcols.defined()) {
      gx = Tensor::empty({B, C_, Gh * p, Gw * p}, weight.dtype(), g_in.device());
      patch_view(gx, p).copy_(dcols.reshape({B, Gh, Gw, C_, p, p}));
    }
    if (gw.defined()) gw = gw.reshape({D, C_, p, p});
    return {gx, gw, gb};
  }
  void release() override { cols = weight = Tensor(); }
};

struct DepthwiseConvBackward : Node {
  Tensor x, weight;  // contiguous
  const char* name() const override { return "DepthwiseConvBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gx, gw, gb;
    depthwise_conv2d_grads(g, x, weight, needs_grad(0) ? &gx : nullptr, needs_grad(1) ? &gw : nullptr,
                           needs_grad(2) ? &gb : nullptr);
    return {gx, gw, gb};
  }
  void release() override { x = weight = Tensor(); }
};

struct AdaptiveAvgPoolBackward : Node {
  Shape input_shape;
  DType dtype;           // the input's (gradients have it)
  int64_t H, W, oh, ow;  // 1-D pooling uses H = oh = 1
  const char* name() const override { return "AdaptiveAvgPoolBackward"; }
  std::vector<Tensor> backward(const Tensor& g_in) override {
    Tensor g = (g_in.dtype() == dtype ? g_in : g_in.to(dtype)).contiguous();
    const Device dev = g.device();
    Tensor gx = Tensor::empty(input_shape, g.dtype(), dev);
    kernels::dispatch(
        dev,
        [&] {
          kernels::cpu::adaptive_avg_pool2d_backward(g.dtype(), gx.raw_data(), g.raw_data(), gx.numel() / (H * W), H, W,
                                                     oh, ow);
        },
        [&](kernels::Cuda c) {
          kernels::cuda::adaptive_avg_pool2d_backward(g.dtype(), gx.raw_data(), g.raw_data(), gx.numel() / (H * W), H,
                                                      W, oh, ow, c.stream);
        });
    return {gx};
  }
};

void check_bias(const Tensor& bias, int64_t n, const Tensor& x, const char* op) {
  if (!bias.defined()) return;
  VT_CHECK(bias.dim() == 1 && bias.size(0) == n, "[", op, "] bias ", bias.describe(), " should be [", n, "]");
  VT_CHECK(bias.dtype() == x.dtype(), "[", op, "] bias ", bias.describe(), " and input ", x.describe(),
           " dtypes differ");
}

Tensor pool_impl(const Tensor& x, int64_t H, int64_t W, int64_t oh, int64_t ow, Shape out_shape, const char* op) {
  const Device dev = common_device(op, {&x});
  VT_CHECK(H >= 1 && W >= 1, "[", op, "] cannot pool the empty input ", x.describe());
  VT_CHECK(oh >= 1 && ow >= 1, "[", op, "] output size must be positive, got ", oh, "x", ow);
  if (dev.is_cuda()) check_cuda_float(x, op);
  else VT_CHECK(is_floating(x.dtype()) && x.dtype() != DType::bf16, "[", op, "] needs f32 or f64, got ", x.describe());
  Tensor xc = x.detach().contiguous();
  Tensor out = Tensor::empty(out_shape, x.dtype(), dev);
  kernels::dispatch(
      dev,
      [&] {
        kernels::cpu::adaptive_avg_pool2d_forward(x.dtype(), out.raw_data(), xc.raw_data(), x.numel() / (H * W), H, W,
                                                  oh, ow);
      },
      [&](kernels::Cuda c) {
        kernels::cuda::adaptive_avg_pool2d_forward(x.dtype(), out.raw_data(), xc.raw_data(), x.numel() / (H * W), H, W,
                                                   oh, ow, c.stream);
      });
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<AdaptiveAvgPoolBackward>();
    node->input_shape = x.shape();
    node->dtype = x.dtype();
    node->H = H;
    node->W = W;
    node->oh = oh;
    node->ow = ow;
    attach_node(out, node, {&x});
  }
  return out;
}

}  // namespace

Tensor conv2d_patch(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const Device dev = common_device("conv2d_patch", {&x, &weight, &bias});
  VT_CHECK(x.dim() == 4, "[conv2d_patch] input must be [B, C, H, W], got ", x.describe());
  VT_CHECK(weight.dim() == 4 && weight.size(2) == weight.size(3) && weight.size(2) >= 1,
           "[conv2d_patch] weight must be [D, C, p, p], got ", weight.describe());
  VT_CHECK(x.dtype() == weight.dtype(), "[conv2d_patch] input ", x.describe(), " and weight ", weight.describe(),
           " dtypes differ");
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t D = weight.size(0), p = weight.size(2);
  VT_CHECK(weight.size(1) == C, "[conv2d_patch] weight ", weight.describe(), " expects ", weight.size(1),
           " channels, input ", x.describe(), " has ", C);
  VT_CHECK(H % p == 0 && W % p == 0, "[conv2d_patch] input ", x.describe(), " is not a whole number of ", p, "x", p,
           " patches");
  check_bias(bias, D, x, "conv2d_patch");
  const int64_t Gh = H / p, Gw = W / p, G = Gh * Gw, K = C * p * p;

  if (dev.is_cuda()) {
    check_cuda_float(x, "conv2d_patch");
    Tensor cols = Tensor::empty({B * G, K}, x.dtype(), dev);
    if (cols.numel() > 0) cols.reshape({B, Gh, Gw, C, p, p}).copy_(patch_view(x.detach(), p));
    Tensor w = weight.detach().contiguous().reshape({D, K});
    Tensor rows = detail::linear_2d_cuda(cols, w, bias.defined() ? bias.detach() : Tensor());  // [B·G, D]
    // NCHW as a view of the token-major rows (channels last in memory): PatchEmbed's flatten + transpose back to
    // tokens is then free, and so is the backward's permute of the gradient.
    Tensor out = rows.reshape({B, Gh, Gw, D}).permute({0, 3, 1, 2});
    if (any_requires_grad({&x, &weight, &bias})) {
      auto node = std::make_shared<Conv2dPatchBackward>();
      if (weight.requires_grad()) node->cols = cols;
      node->weight = w;
      node->B = B, node->C = C, node->Gh = Gh, node->Gw = Gw, node->p = p;
      attach_node(out, node, {&x, &weight, &bias});
    }
    return out;
  }

  Tensor xc = x.detach().contiguous();
  Tensor cols = Tensor::empty({B * G, K}, x.dtype(), x.device());
  kernels::cpu::im2col_patch(x.dtype(), cols.raw_data(), xc.raw_data(), B, C, Gh, Gw, p);
  Tensor w = weight.detach().contiguous().reshape({D, K});
  Tensor out = Tensor::empty({B, D, Gh, Gw}, x.dtype(), x.device());
  double beta = 0.0;
  if (bias.defined()) {
    out.copy_(bias.detach().reshape({1, D, 1, 1}).expand(out.shape()));
    beta = 1.0;
  }
  // out_b [D, G] = W [D, K] · cols_bᵀ [K, G], written straight into the NCHW output.
  kernels::cpu::gemm_batched(x.dtype(), B, D, G, K, 1.0, {w.raw_data(), false, K, 0}, {cols.raw_data(), true, K, G * K},
                             beta, out.raw_data(), G, D * G);
  if (any_requires_grad({&x, &weight, &bias})) {
    auto node = std::make_shared<Conv2dPatchBackward>();
    if (weight.requires_grad()) node->cols = cols;  // only dW needs the patches
    node->weight = w;
    node->B = B;
    node->C = C;
    node->Gh = Gh;
    node->Gw = Gw;
    node->p = p;
    attach_node(out, node, {&x, &weight, &bias});
  }
  return out;
}

void depthwise_conv2d_grads(const Tensor& g_in, const Tensor& x_in, const Tensor& weight_in, Tensor* dx,
                            Tensor* dweight, Tensor* dbias) {
  const Device dev = x_in.device();
  const DType dt = dev.is_cuda() ? x_in.dtype() : g_in.dtype();
  const Tensor g = (g_in.dtype() == dt ? g_in : g_in.to(dt)).contiguous();
  const Tensor x = x_in.detach().contiguous(), weight = weight_in.detach().contiguous();
  if (dx) *dx = Tensor::empty(x.shape(), dt, dev);
  if (dweight) *dweight = Tensor::empty(weight.shape(), dt, dev);
  if (dbias) *dbias = Tensor::empty({x.size(1)}, dt, dev);
  void* px = dx ? dx->raw_data() : nullptr;
  void* pw = dweight ? dweight->raw_data() : nullptr;
  void* pb = dbias ? dbias->raw_data() : nullptr;
  kernels::dispatch(
      dev,
      [&] {
        kernels::cpu::depthwise_backward(dt, px, pw, pb, g.raw_data(), x.raw_data(), weight.raw_data(), x.size(0),
                                         x.size(1), x.size(2), x.size(3), weight.size(2));
      },
      [&](kernels::Cuda c) {
        kernels::cuda::depthwise_backward(dt, px, pw, pb, g.raw_data(), x.raw_data(), weight.raw_data(), x.size(0),
                                          x.size(1), x.size(2), x.size(3), weight.size(2), c.stream);
      });
}

Tensor depthwise_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const Device dev = common_device("depthwise_conv2d", {&x, &weight, &bias});
  VT_CHECK(x.dim() == 4, "[depthwise_conv2d] input must be [B, C, H, W], got ", x.describe());
  const int64_t C = x.size(1), K = weight.dim() == 4 ? weight.size(2) : 0;
  VT_CHECK(K % 2 == 1 && weight.shape() == Shape({C, 1, K, K}), "[depthwise_conv2d] weight ", weight.describe(),
           " should be [", C, ", 1, K, K] with K odd for input ", x.describe());
  VT_CHECK(x.dtype() == weight.dtype(), "[depthwise_conv2d] input ", x.describe(), " and weight ", weight.describe(),
           " dtypes differ");
  check_bias(bias, C, x, "depthwise_conv2d");
  Tensor xc = x.detach().contiguous();
  Tensor wc = weight.detach().contiguous();
  Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), dev);
  const void* bp = bc.defined() ? bc.raw_data() : nullptr;
  kernels::dispatch(
      dev,
      [&] {
        kernels::cpu::depthwise_forward(x.dtype(), out.raw_data(), xc.raw_data(), wc.raw_data(), bp, x.size(0), C,
                                        x.size(2), x.size(3), K);
      },
      [&](kernels::Cuda c) {
        check_cuda_float(x, "depthwise_conv2d");
        kernels::cuda::depthwise_forward(x.dtype(), out.raw_data(), xc.raw_data(), wc.raw_data(), bp, x.size(0), C,
                                         x.size(2), x.size(3), K, c.stream);
      });
  if (any_requires_grad({&x, &weight, &bias})) {
    auto node = std::make_shared<DepthwiseConvBackward>();
    node->x = xc;
    node->weight = wc;
    attach_node(out, node, {&x, &weight, &bias});
  }
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& x, int64_t out_h, int64_t out_w) {
  VT_CHECK(x.dim() >= 2, "[adaptive_avg_pool2d] input must be [..., H, W], got ", x.describe());
  Shape out_shape = x.shape();
  out_shape[out_shape.size() - 2] = out_h;
  out_shape.back() = out_w;
  return pool_impl(x, x.size(-2), x.size(-1), out_h, out_w, out_shape, "adaptive_avg_pool2d");
}

Tensor adaptive_avg_pool1d(const Tensor& x, int64_t out) {
  VT_CHECK(x.dim() >= 1, "[adaptive_avg_pool1d] input must be [..., L], got ", x.describe());
  Shape out_shape = x.shape();
  out_shape.back() = out;
  return pool_impl(x, 1, x.size(-1), 1, out, out_shape, "adaptive_avg_pool1d");
}

}  // namespace vt::ops
