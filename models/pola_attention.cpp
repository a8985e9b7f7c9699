// Polarity-aware linear attention as a composition of differentiable ops (autograd supplies the backward). See the
// header.
#include "models/pola_attention.h"

#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::models {

namespace {

constexpr double kAlpha = 4.0;  // p = 1 + alpha·sigmoid(power)
constexpr double kDenomEps = 1e-6;
// t^p for t ≥ 0 as exp(p·log(t + kPowFloor)): the floor keeps log finite at t = 0, where torch's pow gives 0 and a
// zero gradient; ours gives kPowFloor^p (p ≥ 1: at most 1e-30) and a gradient that vanishes the same way.
constexpr double kPowFloor = 1e-30;

Tensor pow_nonneg(const Tensor& t, const Tensor& p) { return ops::exp(p * ops::log(t + kPowFloor)); }

}  // namespace

Tensor pola_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& power,
                      const Tensor& scale, const Tensor& pos, const Tensor& proj_w, const Tensor& proj_b,
                      int64_t heads) {
  VT_CHECK(x.dim() == 3, "[pola_attention] x must be [B, N, C], got ", x.describe());
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2);
  VT_CHECK(heads > 0 && C % heads == 0, "[pola_attention] C = ", C, " is not divisible by ", heads, " heads");
  const int64_t d = C / heads;
  VT_CHECK(d % 2 == 0, "[pola_attention] the head width ", d, " must be even (v is split into two halves)");
  VT_CHECK(pos.shape() == Shape({1, N, C}), "[pola_attention] positional_encoding ", pos.describe(), " does not fit ",
           N, " tokens of width ", C, " (it is sized by the token count the model was built for)");
  Tensor qkv = nn::autocast_linear(x, qkv_w, qkv_b).reshape({B, N, 3, C});
  Tensor s = ops::log(ops::exp(scale) + 1.0);                                                    // softplus
  auto heads_of = [&](const Tensor& t) { return t.reshape({B, N, heads, d}).transpose(1, 2); };  // [B, H, N, d]
  Tensor q = heads_of(qkv.slice(2, 0, 1).squeeze(2) / s);
  Tensor k = heads_of((qkv.slice(2, 1, 2).squeeze(2) + pos) / s);
  Tensor v = heads_of(qkv.slice(2, 2, 3).squeeze(2));
  Tensor p = ops::sigmoid(power) * kAlpha + 1.0;  // [1, H, 1, d]
  Tensor q_pos = pow_nonneg(ops::relu(q), p), q_neg = pow_nonneg(ops::relu(-q), p);
  Tensor kk = ops::concat({pow_nonneg(ops::relu(k), p), pow_nonneg(ops::relu(-k), p)}, 3);  // [B, H, N, 2d]
  Tensor k_mean_t = ops::mean(kk, {2}, true).transpose(-2, -1);                             // [B, H, 2d, 1]
  Tensor kk_t = kk.transpose(-2, -1) * (1.0 / static_cast<double>(N));
  auto half = [&](const Tensor& qq, const Tensor& vv) {
    return ops::matmul(qq, ops::matmul(kk_t, vv)) / (ops::matmul(qq, k_mean_t) + kDenomEps);
  };
  Tensor same = half(ops::concat({q_pos, q_neg}, 3), v.slice(3, 0, d / 2));
  Tensor opposite = half(ops::concat({q_neg, q_pos}, 3), v.slice(3, d / 2, d));
  Tensor out = ops::concat({same, opposite}, 3).transpose(1, 2).reshape({B, N, C});
  return nn::autocast_linear(out, proj_w, proj_b);
}

PolaAttention::PolaAttention(int64_t dim, int64_t heads, int64_t tokens, double proj_drop, Generator& gen)
    : heads_(heads), proj_drop_(proj_drop) {
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  VT_CHECK((dim / heads) % 2 == 0, "[model] model.attention.type 'pola' needs an even head width, got ", dim / heads);
  VT_CHECK(tokens >= 1, "[model] model.attention.type 'pola' needs the token count: its positional encoding is ",
           "sized by it");
  // In the official state_dict's order: its own tensors (power, scale, positional_encoding), then qkv and proj.
  power = register_parameter("power", Tensor::zeros({1, heads, 1, dim / heads}));
  scale = register_parameter("scale", Tensor::zeros({1, 1, dim}));
  positional_encoding = register_parameter("positional_encoding", Tensor::zeros({1, tokens, dim}));
  qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, true, gen));
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
  init_linear_pytorch_default(*qkv, gen);
  init_linear_pytorch_default(*proj, gen);
}

Tensor PolaAttention::forward(const Tensor& x) const {
  Tensor out =
      pola_attention(x, qkv->weight, qkv->bias, power, scale, positional_encoding, proj->weight, proj->bias, heads_);
  return ops::dropout(out, proj_drop_, training());
}

}  // namespace vt::models
