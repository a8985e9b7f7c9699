// InLine attention as a composition of differentiable ops (autograd supplies the backward). See the header.
#include "models/inline_attention.h"

#include <cmath>

#include "nn/autocast.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace vt::models {

namespace {

constexpr int64_t kKernelTaps = 9;  // the predicted 3×3 kernel per channel

// Conv1d(kernel_size=1, groups) on one position per row: t [B, C_in], w [C_out, C_in/groups, 1], b [C_out].
Tensor grouped_pointwise(const Tensor& t, const Tensor& w, const Tensor& b, int64_t groups) {
  const int64_t B = t.size(0), in = t.size(1), out = w.size(0);
  Tensor tg = t.reshape({B, groups, 1, in / groups});
  Tensor wg = w.reshape({groups, out / groups, in / groups}).transpose(-2, -1);  // [G, in/G, out/G]
  return ops::matmul(tg, wg).reshape({B, out}) + b;
}

// Holds a Conv1d's weight and bias so their keys read residual.0.weight / residual.0.bias as the official ones.
struct Conv1dParams : nn::Module {
  Conv1dParams(int64_t out, int64_t in_per_group, Generator& gen) {
    weight = register_parameter("weight", Tensor::empty({out, in_per_group, 1}));
    bias = register_parameter("bias", Tensor::empty({out}));
    nn::init::default_uniform(weight, in_per_group, gen);  // PyTorch's Conv1d init: fan_in = in/groups · 1
    nn::init::default_uniform(bias, in_per_group, gen);
  }
  Tensor weight, bias;
};

struct Residual : nn::Module {
  Residual(int64_t dim, int64_t heads, Generator& gen) {
    first = register_module("0", std::make_shared<Conv1dParams>(dim, dim / heads, gen));
    second = register_module("2", std::make_shared<Conv1dParams>(kKernelTaps * dim, dim / heads, gen));
  }
  std::shared_ptr<Conv1dParams> first, second;
};

}  // namespace

Tensor inline_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& res0_w,
                        const Tensor& res0_b, const Tensor& res2_w, const Tensor& res2_b, const Tensor& proj_w,
                        const Tensor& proj_b, int64_t heads) {
  VT_CHECK(x.dim() == 3, "[inline_attention] x must be [B, N, C], got ", x.describe());
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2), G = square_grid(N);
  VT_CHECK(heads > 0 && C % heads == 0, "[inline_attention] C = ", C, " is not divisible by ", heads, " heads");
  VT_CHECK(G > 0, "[inline_attention] N - 1 = ", N - 1, " tokens do not form a square patch grid");
  const int64_t d = C / heads;
  const double sigma = 1.0 / std::sqrt(static_cast<double>(d));
  Tensor qkv = nn::autocast_linear(x, qkv_w, qkv_b).reshape({B, N, 3, C});
  Tensor v = qkv.slice(2, 2, 3).squeeze(2);                                                      // [B, N, C]
  auto heads_of = [&](const Tensor& t) { return t.reshape({B, N, heads, d}).transpose(1, 2); };  // [B, H, N, d]
  Tensor qh = heads_of(qkv.slice(2, 0, 1).squeeze(2)), kh = heads_of(qkv.slice(2, 1, 2).squeeze(2)), vh = heads_of(v);
  Tensor kv = ops::matmul(kh.transpose(-2, -1), vh) * (sigma / static_cast<double>(N));  // [B, H, d, d]
  Tensor k_mean = ops::mean(kh, {2}, true), v_mean = ops::mean(vh, {2}, true);           // [B, H, 1, d]
  Tensor rest = ops::sub(1.0, ops::matmul(qh, k_mean.transpose(-2, -1)) * sigma);        // [B, H, N, 1]
  Tensor out = (ops::matmul(qh, kv) + rest * v_mean).transpose(1, 2).reshape({B, N, C});

  // The local residual: per image and channel a 3×3 kernel from the token mean of x, run over V's patch grid.
  Tensor mixed = ops::gelu(grouped_pointwise(ops::mean(x, {1}), res0_w, res0_b, heads));
  Tensor kernels = grouped_pointwise(mixed, res2_w, res2_b, heads).reshape({B * C, 1, 3, 3});
  Tensor grid = v.slice(1, 1, N).transpose(1, 2).reshape({1, B * C, G, G});
  Tensor local = ops::depthwise_conv2d(grid, nn::cast_to(kernels, grid.dtype()), Tensor());
  Tensor patches = out.slice(1, 1, N) + local.reshape({B, C, G * G}).transpose(1, 2);
  out = ops::concat({out.slice(1, 0, 1), patches}, 1);
  return nn::autocast_linear(out, proj_w, proj_b);
}

InLineAttention::InLineAttention(int64_t dim, int64_t heads, double proj_drop, Generator& gen)
    : heads_(heads), proj_drop_(proj_drop) {
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, true, gen));
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
  init_linear_pytorch_default(*qkv, gen);
  init_linear_pytorch_default(*proj, gen);
  auto residual = register_module("residual", std::make_shared<Residual>(dim, heads, gen));
  res0_weight = residual->first->weight, res0_bias = residual->first->bias;
  res2_weight = residual->second->weight, res2_bias = residual->second->bias;
}

Tensor InLineAttention::forward(const Tensor& x) const {
  Tensor out = inline_attention(x, qkv->weight, qkv->bias, res0_weight, res0_bias, res2_weight, res2_bias, proj->weight,
                                proj->bias, heads_);
  return ops::dropout(out, proj_drop_, training());
}

}  // namespace vt::models
