// Linear attention as a composition of differentiable ops (autograd supplies the backward). See linear_attention.h.
#include "models/linear_attention.h"

#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::models {

namespace {

constexpr double kNormEps = 1e-6;   // RMSNorm eps
constexpr double kDenomEps = 1e-6;  // added to the normaliser φ(q)·Σφ(k)

// RMSNorm over the last dim, t / sqrt(mean(t²) + eps) · w, computed in f32 and returned in t's dtype (the
// official `(w * norm(t.float())).type_as(t)`).
Tensor rms_norm(const Tensor& t, const Tensor& w) {
  const Tensor t32 = nn::at_least_f32(t);
  const Tensor normed = t32 * ops::rsqrt(ops::mean(ops::square(t32), {-1}, true) + kNormEps) * w;
  return nn::cast_to(normed, t.dtype());
}

// Holds the norm weights so their keys read q_norm.weight / k_norm.weight, as the official RMSNorm modules.
struct NormWeight : nn::Module {
  explicit NormWeight(int64_t dim) { weight = register_parameter("weight", Tensor::ones({dim})); }
  Tensor weight;
};

}  // namespace

Tensor linear_attention_core(const Tensor& fq, const Tensor& fk, const Tensor& v) {
  const Tensor q = nn::at_least_f32(fq), k = nn::at_least_f32(fk), vf = nn::at_least_f32(v);
  Tensor kv = ops::matmul(k.transpose(-2, -1), vf);                    // [B, H, d, d]
  Tensor k_sum = ops::sum(k, {2}, true);                               // [B, H, 1, d]
  Tensor denom = ops::matmul(q, k_sum.transpose(-2, -1)) + kDenomEps;  // [B, H, N, 1]
  return ops::matmul(q, kv) / denom;
}

Tensor linear_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& q_norm_w,
                        const Tensor& k_norm_w, const Tensor& proj_w, const Tensor& proj_b, int64_t heads) {
  VT_CHECK(x.dim() == 3, "[linear_attention] x must be [B, N, C], got ", x.describe());
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2);
  VT_CHECK(heads > 0 && C % heads == 0, "[linear_attention] C = ", C, " is not divisible by ", heads, " heads");
  const int64_t d = C / heads;
  Tensor qkv = nn::autocast_linear(x, qkv_w, qkv_b).reshape({B, N, 3, C});
  // φ = ReLU is element-wise, so it is applied before the head split, on the contiguous normalised q and k.
  Tensor q = ops::relu(rms_norm(qkv.slice(2, 0, 1).squeeze(2), q_norm_w));
  Tensor k = ops::relu(rms_norm(qkv.slice(2, 1, 2).squeeze(2), k_norm_w));
  Tensor v = qkv.slice(2, 2, 3).squeeze(2);
  auto heads_of = [&](const Tensor& t) { return t.reshape({B, N, heads, d}).transpose(1, 2); };  // [B, H, N, d]
  Tensor out = linear_attention_core(heads_of(q), heads_of(k), heads_of(v)).transpose(1, 2).reshape({B, N, C});
  return proj_w.defined() ? nn::autocast_linear(out, proj_w, proj_b) : out;
}

LinearAttention::LinearAttention(int64_t dim, int64_t heads, double proj_drop, Generator& gen)
    : heads_(heads), proj_drop_(proj_drop) {
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, false, gen));  // official: bias=False
  q_norm_weight = register_module("q_norm", std::make_shared<NormWeight>(dim))->weight;
  k_norm_weight = register_module("k_norm", std::make_shared<NormWeight>(dim))->weight;
  init_linear_pytorch_default(*qkv, gen);
  if (heads > 1) {
    proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
    init_linear_pytorch_default(*proj, gen);
  }
}

Tensor LinearAttention::forward(const Tensor& x) const {
  Tensor out = linear_attention(x, qkv->weight, qkv->bias, q_norm_weight, k_norm_weight, proj ? proj->weight : Tensor(),
                                proj ? proj->bias : Tensor(), heads_);
  return proj ? ops::dropout(out, proj_drop_, training()) : out;
}

}  // namespace vt::models
