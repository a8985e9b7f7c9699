#include "nn/layers.h"

#include "nn/autocast.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace vt::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias, Generator& gen) {
  weight = register_parameter("weight", Tensor::empty({out, in}));
  init::trunc_normal(weight, 0.02, gen);
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({out}));
}

Tensor Linear::forward(const Tensor& x) const { return autocast_linear(x, weight, bias); }

LayerNorm::LayerNorm(int64_t dim, double eps_) : eps(eps_) {
  weight = register_parameter("weight", Tensor::ones({dim}));
  bias = register_parameter("bias", Tensor::zeros({dim}));
}

// Under autocast the statistics stay f32 (f32 weight and bias too); only the output is in the autocast dtype.
Tensor LayerNorm::forward(const Tensor& x) const {
  if (auto dt = autocast_dtype_for(x)) return ops::layer_norm(x, weight, bias, eps, *dt);
  return ops::layer_norm(x, weight, bias, eps);
}

std::pair<Tensor, Tensor> LayerNorm::forward_add(const Tensor& x, const Tensor& y) const {
  return ops::add_layer_norm(x, y, weight, bias, eps, autocast_dtype_for(x));
}

RMSNorm::RMSNorm(int64_t dim, double eps_) : eps(eps_) { weight = register_parameter("weight", Tensor::ones({dim})); }

Tensor RMSNorm::forward(const Tensor& x) const {
  const Tensor x32 = x.dtype() == DType::bf16 ? x.to(DType::f32) : x;
  const Tensor normed = x32 * ops::rsqrt(ops::mean(ops::square(x32), {-1}, true) + eps);
  return (normed.dtype() == x.dtype() ? normed : normed.to(x.dtype())) * cast_to(weight, x.dtype());
}

std::pair<Tensor, Tensor> RMSNorm::forward_add(const Tensor& x, const Tensor& y) const {
  Tensor h = x + y;
  return {h, forward(h)};
}

Conv2dPatch::Conv2dPatch(int64_t in_chans, int64_t out, int64_t patch, Generator& gen) {
  weight = register_parameter("weight", Tensor::empty({out, in_chans, patch, patch}));
  bias = register_parameter("bias", Tensor::empty({out}));
  init::default_uniform(weight, in_chans * patch * patch, gen);
  init::default_uniform(bias, in_chans * patch * patch, gen);
}

Tensor Conv2dPatch::forward(const Tensor& x) const {
  if (auto dt = autocast_dtype_for(x))
    return ops::conv2d_patch(cast_to(x, *dt), cast_to(weight, *dt), cast_to(bias, *dt));
  return ops::conv2d_patch(x, weight, bias);
}

PatchEmbed::PatchEmbed(int64_t img_size, int64_t patch, int64_t in_chans, int64_t dim, Generator& gen)
    : img_size_(img_size), patch_(patch), in_chans_(in_chans) {
  VT_CHECK(patch > 0 && img_size % patch == 0, "[model] img_size ", img_size, " is not a multiple of patch_size ",
           patch);
  proj = register_module("proj", std::make_shared<Conv2dPatch>(in_chans, dim, patch, gen));
}

Tensor PatchEmbed::forward(const Tensor& x) const {
  VT_CHECK(x.dim() == 4 && x.size(1) == in_chans_ && x.size(2) == img_size_ && x.size(3) == img_size_,
           "[patch_embed] expected input [B, ", in_chans_, ", ", img_size_, ", ", img_size_, "], got ", x.describe());
  Tensor y = proj->forward(x);          // [B, D, G, G]
  return y.flatten(2).transpose(1, 2);  // [B, N, D]
}

Mlp::Mlp(int64_t dim, int64_t hidden, double drop_, Generator& gen) : drop(drop_) {
  fc1 = register_module("fc1", std::make_shared<Linear>(dim, hidden, true, gen));
  fc2 = register_module("fc2", std::make_shared<Linear>(hidden, dim, true, gen));
}

Tensor Mlp::forward(const Tensor& x) const {
  Tensor h = ops::dropout(ops::gelu(fc1->forward(x)), drop, training());
  return ops::dropout(fc2->forward(h), drop, training());
}

}  // namespace vt::nn
