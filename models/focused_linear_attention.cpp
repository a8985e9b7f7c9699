// Focused linear attention as a composition of differentiable ops (autograd supplies the backward). See the header.
#include "models/focused_linear_attention.h"

#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::models {

namespace {

constexpr double kKernelEps = 1e-6;  // added after the ReLU, so the focusing never divides by a zero norm
constexpr double kDenomEps = 1e-6;

Tensor l2_norm_keepdim(const Tensor& t) { return ops::sqrt(ops::sum(ops::square(t), {-1}, true)); }

// t³ rescaled to the norm of t, over the last dim (the official focusing_factor 3).
Tensor focus(const Tensor& t) {
  Tensor cubed = t * t * t;
  return cubed * (l2_norm_keepdim(t) / l2_norm_keepdim(cubed));
}

}  // namespace

Tensor focused_linear_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& scale,
                                const Tensor& pos, const Tensor& proj_w, const Tensor& proj_b, int64_t heads) {
  VT_CHECK(x.dim() == 3, "[focused_linear_attention] x must be [B, N, C], got ", x.describe());
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2);
  VT_CHECK(heads > 0 && C % heads == 0, "[focused_linear_attention] C = ", C, " is not divisible by ", heads, " heads");
  VT_CHECK(pos.shape() == Shape({1, N, C}), "[focused_linear_attention] positional_encoding ", pos.describe(),
           " does not fit ", N, " tokens of width ", C, " (it is sized by the token count the model was built for)");
  const int64_t d = C / heads;
  // Under autocast the qkv projection is bf16 and, as in the official module, so is relu(·) + 1e-6; dividing by
  // softplus(scale) (an f32 parameter) promotes q and k to f32, and the bf16 V meets f32 in the matmuls, so the
  // focusing and the core run in f32: what the official code's autocast-off block gives.
  Tensor qkv = nn::autocast_linear(x, qkv_w, qkv_b).reshape({B, N, 3, C});
  Tensor s = ops::log(ops::exp(scale) + 1.0);  // softplus
  Tensor q = focus((ops::relu(qkv.slice(2, 0, 1).squeeze(2)) + kKernelEps) / s);
  Tensor k = focus((ops::relu(qkv.slice(2, 1, 2).squeeze(2) + pos) + kKernelEps) / s);
  Tensor v = qkv.slice(2, 2, 3).squeeze(2);
  auto heads_of = [&](const Tensor& t) { return t.reshape({B, N, heads, d}).transpose(1, 2); };  // [B, H, N, d]
  Tensor fq = heads_of(q), fk = heads_of(k), vh = heads_of(v);
  Tensor kv = ops::matmul(fk.transpose(-2, -1), vh);                                      // [B, H, d, d]
  Tensor denom = ops::matmul(fq, ops::sum(fk, {2}, true).transpose(-2, -1)) + kDenomEps;  // [B, H, N, 1]
  Tensor out = (ops::matmul(fq, kv) / denom).transpose(1, 2).reshape({B, N, C});
  return nn::autocast_linear(out, proj_w, proj_b);
}

FocusedLinearAttention::FocusedLinearAttention(int64_t dim, int64_t heads, int64_t tokens, double proj_drop,
                                               Generator& gen)
    : heads_(heads), proj_drop_(proj_drop) {
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  VT_CHECK(tokens >= 1, "[model] model.attention.type 'flatten' needs the token count: its positional encoding is ",
           "sized by it");
  // Registered in the official module's order: scale, positional_encoding, qkv, proj.
  scale = register_parameter("scale", Tensor::zeros({1, 1, dim}));
  positional_encoding = register_parameter("positional_encoding", Tensor::zeros({1, tokens, dim}));
  qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, true, gen));
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
  init_linear_pytorch_default(*qkv, gen);
  init_linear_pytorch_default(*proj, gen);
}

Tensor FocusedLinearAttention::forward(const Tensor& x) const {
  Tensor out =
      focused_linear_attention(x, qkv->weight, qkv->bias, scale, positional_encoding, proj->weight, proj->bias, heads_);
  return ops::dropout(out, proj_drop_, training());
}

}  // namespace vt::models
