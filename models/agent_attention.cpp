// Agent attention as a composition of differentiable ops (autograd supplies the backward). See agent_attention.h.
#include "models/agent_attention.h"

#include <cmath>
#include <vector>

#include "nn/init.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::models {

namespace {

constexpr int64_t kBiasBase = 7;  // an/na are stored 7×7 for any agent count (Agent-DeiT) and resized to G×G

int64_t exact_sqrt(int64_t n) {
  const auto r = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  return r * r == n ? r : 0;
}

// [B, N, C] → [B, H, N, d] with channel c in head c / d (timm's layout).
Tensor split_heads(const Tensor& t, int64_t heads) {
  const int64_t B = t.size(0), N = t.size(1), C = t.size(2);
  return t.reshape({B, N, heads, C / heads}).transpose(1, 2);
}

}  // namespace

Tensor agent_tokens(const Tensor& q, int64_t agent_num, bool patches_only) {
  VT_CHECK(q.dim() == 3, "[agent_attention] q must be [B, N, C], got ", q.describe());
  const int64_t B = q.size(0), N = q.size(1), C = q.size(2), G = exact_sqrt(N - 1), p = exact_sqrt(agent_num);
  VT_CHECK(N >= 2 && G > 0, "[agent_attention] N - 1 = ", N - 1, " tokens do not form a square patch grid");
  VT_CHECK(p > 0, "[agent_attention] model.attention.agent_num (", agent_num, ") must be a perfect square");
  const int64_t first = patches_only ? 1 : 0;
  Tensor grid = q.slice(1, first, first + G * G).reshape({B, G, G, C}).permute({0, 3, 1, 2});  // [B, C, G, G]
  return ops::adaptive_avg_pool2d(grid, p, p).reshape({B, C, p * p}).transpose(1, 2);          // [B, n, C]
}

Tensor bilinear_resize_matrix(int64_t in, int64_t out, DType dtype) {
  VT_CHECK(in >= 1 && out >= 1, "[agent_attention] cannot resize ", in, "x", in, " to ", out, "x", out);
  // 1-D weights w[o][i] of PyTorch's upsample_bilinear2d with align_corners=False and an explicit output size:
  // source = (o + 0.5)·in/out − 0.5, clamped below at 0; neighbours i0 and min(i0 + 1, in − 1).
  std::vector<double> w(static_cast<size_t>(out * in), 0.0);
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t o = 0; o < out; ++o) {
    double src = std::max(0.0, (static_cast<double>(o) + 0.5) * scale - 0.5);
    const auto i0 = static_cast<int64_t>(src);
    const int64_t i1 = i0 < in - 1 ? i0 + 1 : i0;
    const double l1 = src - static_cast<double>(i0);
    w[o * in + i0] += 1.0 - l1;
    w[o * in + i1] += l1;
  }
  std::vector<double> m(static_cast<size_t>(out * out * in * in), 0.0);
  for (int64_t oy = 0; oy < out; ++oy)
    for (int64_t ox = 0; ox < out; ++ox)
      for (int64_t iy = 0; iy < in; ++iy)
        for (int64_t ix = 0; ix < in; ++ix)
          m[((oy * out + ox) * in + iy) * in + ix] = w[oy * in + iy] * w[ox * in + ix];
  return Tensor::from_vector(m, {out * out, in * in}, dtype);
}

std::pair<Tensor, Tensor> agent_bias_terms(const AgentBiases& b, int64_t G) {
  const int64_t H = b.an.size(0), n = b.an.size(1), P = G * G;
  VT_CHECK(b.ah.size(3) == G && b.ha.size(2) == G, "[agent_attention] biases are sized for a ", b.ah.size(3), "x",
           b.ah.size(3), " patch grid, the input has ", G, "x", G);
  const Tensor resize_t =
      bilinear_resize_matrix(kBiasBase, G, b.an.dtype()).to(b.an.device()).transpose(0, 1);  // [49, G²]
  // Agents' logits over [CLS | patches]: ac, then resized an + ah (by row) + aw (by column).
  Tensor an = ops::matmul(b.an.reshape({H * n, kBiasBase * kBiasBase}), resize_t).reshape({H, n, P});
  Tensor a_patch = an + (b.ah + b.aw).reshape({H, n, P});
  Tensor pos = ops::concat({b.ac.reshape({H, n, 1}), a_patch}, 2);  // [H, n, N]
  // Tokens' logits over the agents: ca for CLS, then resized na (transposed) + ha + wa.
  Tensor na = ops::matmul(b.na.reshape({H * n, kBiasBase * kBiasBase}), resize_t).reshape({H, n, P}).transpose(1, 2);
  Tensor patch_a = na + (b.ha + b.wa).reshape({H, P, n});
  Tensor tok = ops::concat({b.ca.reshape({H, 1, n}), patch_a}, 1);  // [H, N, n]
  return {pos, tok};
}

Tensor agent_core(const Tensor& q, const Tensor& k, const Tensor& v, const AgentOptions& o, const AgentBiases* biases) {
  VT_CHECK(q.dim() == 3 && k.shape() == q.shape() && v.shape() == q.shape(),
           "[agent_attention] q, k, v must be equal [B, N, C], got ", q.describe(), ", ", k.describe(), ", ",
           v.describe());
  const int64_t B = q.size(0), N = q.size(1), C = q.size(2), H = o.heads;
  VT_CHECK(H > 0 && C % H == 0, "[agent_attention] C = ", C, " is not divisible by ", H, " heads");
  const double scale = 1.0 / std::sqrt(static_cast<double>(C / H));
  VT_CHECK(!o.sequence || !biases, "[agent_attention] the agent biases need a patch grid, not 1-D pooling");
  VT_CHECK(!o.sequence || o.agent_num <= N, "[agent_attention] model.attention.agent_num (", o.agent_num,
           ") must be <= the number of tokens N = ", N, " to pool them 1-D");
  const Tensor agents =
      o.sequence ? ops::mita_landmark_pool(q, 0, N, 0, o.agent_num) : agent_tokens(q, o.agent_num, o.patches_only);
  Tensor a = split_heads(agents, H);  // [B, H, n, d]
  Tensor qh = split_heads(q, H), kh = split_heads(k, H), vh = split_heads(v, H);
  Tensor agent_logits = ops::matmul(a * scale, kh.transpose(-2, -1));  // [B, H, n, N]
  Tensor token_logits = ops::matmul(qh * scale, a.transpose(-2, -1));  // [B, H, N, n]
  if (biases) {
    auto [pos, tok] = agent_bias_terms(*biases, exact_sqrt(N - 1));
    agent_logits = agent_logits + pos;
    token_logits = token_logits + tok;
  }
  Tensor agent_v = ops::matmul(ops::softmax(agent_logits, -1), vh);   // [B, H, n, d]
  Tensor out = ops::matmul(ops::softmax(token_logits, -1), agent_v);  // [B, H, N, d]
  return out.transpose(1, 2).reshape({B, N, C});
}

Tensor agent_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& proj_w,
                       const Tensor& proj_b, const AgentOptions& o, const AgentBiases* biases) {
  VT_CHECK(x.dim() == 3, "[agent_attention] x must be [B, N, C], got ", x.describe());
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2);
  Tensor qkv = nn::autocast_linear(x, qkv_w, qkv_b).reshape({B, N, 3, C});
  Tensor q = qkv.slice(2, 0, 1).squeeze(2), k = qkv.slice(2, 1, 2).squeeze(2), v = qkv.slice(2, 2, 3).squeeze(2);
  return nn::autocast_linear(agent_core(q, k, v, o, biases), proj_w, proj_b);
}

AgentAttention::AgentAttention(int64_t dim, const AgentOptions& o, int64_t grid, double proj_drop, Generator& gen)
    : opt_(o), grid_(grid), proj_drop_(proj_drop) {
  const int64_t H = o.heads, n = o.agent_num;
  VT_CHECK(H > 0 && dim % H == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", H);
  VT_CHECK(o.sequence || exact_sqrt(n) > 0, "[model] model.attention.agent_num (", n, ") must be a perfect square");
  VT_CHECK(grid >= 0, "[model] agent attention: negative patch grid ", grid);
  if (grid > 0) {
    // Registered before qkv/proj, matching the official module's state_dict order.
    const int64_t G = grid;
    bias.an = register_parameter("an_bias", Tensor::empty({H, n, kBiasBase, kBiasBase}));
    bias.na = register_parameter("na_bias", Tensor::empty({H, n, kBiasBase, kBiasBase}));
    bias.ah = register_parameter("ah_bias", Tensor::empty({1, H, n, G, 1}));
    bias.aw = register_parameter("aw_bias", Tensor::empty({1, H, n, 1, G}));
    bias.ha = register_parameter("ha_bias", Tensor::empty({1, H, G, 1, n}));
    bias.wa = register_parameter("wa_bias", Tensor::empty({1, H, 1, G, n}));
    bias.ac = register_parameter("ac_bias", Tensor::empty({1, H, n, 1}));
    bias.ca = register_parameter("ca_bias", Tensor::empty({1, H, 1, n}));
    for (const Tensor* t : {&bias.an, &bias.na, &bias.ah, &bias.aw, &bias.ha, &bias.wa, &bias.ac, &bias.ca})
      nn::init::trunc_normal(*t, 0.02, gen);
  }
  qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, true, gen));
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
  init_linear_pytorch_default(*qkv, gen);
  init_linear_pytorch_default(*proj, gen);
}

Tensor AgentAttention::forward(const Tensor& x) const {
  if (grid_ > 0)
    VT_CHECK(x.dim() == 3 && x.size(1) == 1 + grid_ * grid_,
             "[agent_attention] the biases are sized for N = ", 1 + grid_ * grid_, " tokens (CLS + ", grid_, "x", grid_,
             " patches), got ", x.describe());
  Tensor out = agent_attention(x, qkv->weight, qkv->bias, proj->weight, proj->bias, opt_, grid_ > 0 ? &bias : nullptr);
  return ops::dropout(out, proj_drop_, training());
}

}  // namespace vt::models
