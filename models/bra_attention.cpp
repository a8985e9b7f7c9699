// BRA as a composition of differentiable ops (autograd supplies the backward). See the header.
#include "models/bra_attention.h"

#include <cmath>

#include "nn/autocast.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace vt::models {

namespace {

constexpr int64_t kLceKernel = 5;  // side_dwconv

// [B, G·G, F] row-major patches ↔ [B, R, w·w, F] region by region (regions row-major, patches row-major inside
// one): the official "n (j h) (i w) c -> n (j i) (h w) c".
Tensor to_regions(const Tensor& t, int64_t n, int64_t w) {
  const int64_t B = t.size(0), F = t.size(2);
  return t.reshape({B, n, w, n, w, F}).permute({0, 1, 3, 2, 4, 5}).reshape({B, n * n, w * w, F});
}
Tensor from_regions(const Tensor& t, int64_t n, int64_t w) {
  const int64_t B = t.size(0), F = t.size(3);
  return t.reshape({B, n, n, w, w, F}).permute({0, 1, 3, 2, 4, 5}).reshape({B, n * w * n * w, F});
}

// The routed regions' rows of a [B·R, ...] tensor: idx [B, R, topk] (i64, per image) + b·R, flattened. Computed in
// f64 (exact for these integers): the element-wise ops take no i64. The offsets are made on idx's device, so a
// forward copies nothing from the host (and a CUDA graph can capture it).
Tensor batch_rows(const Tensor& idx, int64_t R) {
  const int64_t B = idx.size(0);
  Tensor off = Tensor::arange(B, DType::f64, idx.device()).reshape({B, 1, 1}) * static_cast<double>(R);
  return (idx.to(DType::f64) + off).to(DType::i64).reshape({idx.numel()});
}

}  // namespace

double bra_scale(const std::string& which, int64_t dim, int64_t heads) {
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  VT_CHECK(which == "head_dim" || which == "qk_dim", "[model] model.attention.bra_scale must be head_dim or qk_dim, ",
           "got '", which, "'");
  return 1.0 / std::sqrt(static_cast<double>(which == "head_dim" ? dim / heads : dim));
}

Tensor bra_attention(const Tensor& x, const Tensor& qkv_w, const Tensor& qkv_b, const Tensor& lepe_w,
                     const Tensor& lepe_b, const Tensor& proj_w, const Tensor& proj_b, const BraOptions& o) {
  VT_CHECK(x.dim() == 3, "[bra] x must be [B, N, C], got ", x.describe());
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2), G = square_grid(N), H = o.heads;
  VT_CHECK(H > 0 && C % H == 0, "[bra] C = ", C, " is not divisible by ", H, " heads");
  VT_CHECK(G > 0, "[bra] N - 1 = ", N - 1, " tokens do not form a square patch grid");
  VT_CHECK(o.n_win >= 1 && G % o.n_win == 0, "[bra] the ", G, "x", G, " patch grid does not cut into ", o.n_win, "x",
           o.n_win, " regions (model.attention.n_win)");
  const int64_t n = o.n_win, w = G / n, R = n * n, W2 = w * w, d = C / H, L = 1 + o.topk * W2;
  VT_CHECK(o.topk >= 1 && o.topk <= R, "[bra] topk = ", o.topk, " is out of range for ", R,
           " regions (model.attention.topk)");
  VT_CHECK(lepe_w.shape() == Shape({C, 1, kLceKernel, kLceKernel}) && lepe_b.shape() == Shape({C}),
           "[bra] lepe.weight ", lepe_w.describe(), " / lepe.bias ", lepe_b.describe(), " should be [", C,
           ", 1, 5, 5] / [", C, "]");
  const double s = o.scale;
  Tensor qkv = nn::autocast_linear(x, qkv_w, qkv_b);  // [B, N, 3C]

  // CLS: its query over all N tokens.
  auto heads_of = [&](const Tensor& t) { return t.reshape({B, t.size(1), H, d}).transpose(1, 2); };  // [B, H, ., d]
  Tensor cls_q = heads_of(qkv.slice(1, 0, 1).slice(2, 0, C));
  Tensor all_k = heads_of(qkv.slice(2, C, 2 * C)), all_v = heads_of(qkv.slice(2, 2 * C, 3 * C));
  Tensor cls_out = ops::matmul(ops::softmax(ops::matmul(cls_q * s, all_k.transpose(-2, -1)), -1), all_v);
  cls_out = cls_out.transpose(1, 2).reshape({B, 1, C});

  // Routing on the patch map: region means of q and k, their affinity, the topk regions of each region.
  Tensor regions = to_regions(qkv.slice(1, 1, N), n, w);  // [B, R, w², 3C]
  Tensor q_reg = regions.slice(3, 0, C), kv_reg = regions.slice(3, C, 3 * C);
  Tensor q_r = ops::mean(q_reg.detach(), {2}), k_r = ops::mean(regions.slice(3, C, 2 * C).detach(), {2});
  Tensor routed = ops::topk(ops::matmul(q_r * s, k_r.transpose(-2, -1)), o.topk, -1).second;  // [B, R, topk]

  // Each region's keys/values: the CLS token's, then its routed regions' patches.
  Tensor kv_sel = ops::index_select(kv_reg.reshape({B * R, W2, 2 * C}), 0, batch_rows(routed, R));
  Tensor cls_kv = qkv.slice(1, 0, 1).slice(2, C, 3 * C).reshape({B, 1, 1, 2 * C}).expand({B, R, 1, 2 * C});
  kv_sel = ops::concat({cls_kv, kv_sel.reshape({B, R, o.topk * W2, 2 * C})}, 2);  // [B, R, L, 2C]
  auto region_heads = [&](const Tensor& t, int64_t len) {  // [B, R, len, C] → [B, R, H, len, d]
    return t.reshape({B, R, len, H, d}).permute({0, 1, 3, 2, 4});
  };
  Tensor qh = region_heads(q_reg, W2), kh = region_heads(kv_sel.slice(3, 0, C), L);
  Tensor vh = region_heads(kv_sel.slice(3, C, 2 * C), L);
  Tensor out = ops::matmul(ops::softmax(ops::matmul(qh * s, kh.transpose(-2, -1)), -1), vh);  // [B, R, H, w², d]
  out = from_regions(out.permute({0, 1, 3, 2, 4}).reshape({B, R, W2, C}), n, w);              // [B, G², C]

  // LCE: the depth-wise 5×5 conv of V over the patch map.
  Tensor v_map = qkv.slice(1, 1, N).slice(2, 2 * C, 3 * C).transpose(1, 2).reshape({B, C, G, G});
  Tensor lce = ops::depthwise_conv2d(v_map, nn::cast_to(lepe_w, v_map.dtype()), nn::cast_to(lepe_b, v_map.dtype()));
  out = out + lce.reshape({B, C, G * G}).transpose(1, 2);
  return nn::autocast_linear(ops::concat({cls_out, out}, 1), proj_w, proj_b);
}

namespace {
// Holds the LCE conv's weight and bias so their keys read lepe.weight / lepe.bias, as the official nn.Conv2d's.
struct LepeParams : nn::Module {
  LepeParams(int64_t dim, Generator& gen) {
    weight = register_parameter("weight", Tensor::empty({dim, 1, kLceKernel, kLceKernel}));
    bias = register_parameter("bias", Tensor::empty({dim}));
    const int64_t fan_in = kLceKernel * kLceKernel;  // PyTorch's Conv2d init: fan_in = in/groups · k²
    nn::init::default_uniform(weight, fan_in, gen);
    nn::init::default_uniform(bias, fan_in, gen);
  }
  Tensor weight, bias;
};
}  // namespace

BraAttention::BraAttention(int64_t dim, const BraOptions& o, double proj_drop, Generator& gen)
    : o_(o), proj_drop_(proj_drop) {
  VT_CHECK(o.heads > 0 && dim % o.heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", o.heads);
  // In the official state_dict's order: lepe, qkv (qkv.qkv), proj (wo).
  auto lepe = register_module("lepe", std::make_shared<LepeParams>(dim, gen));
  lepe_weight = lepe->weight, lepe_bias = lepe->bias;
  qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, true, gen));
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
  init_linear_pytorch_default(*qkv, gen);
  init_linear_pytorch_default(*proj, gen);
}

Tensor BraAttention::forward(const Tensor& x) const {
  Tensor out = bra_attention(x, qkv->weight, qkv->bias, lepe_weight, lepe_bias, proj->weight, proj->bias, o_);
  return ops::dropout(out, proj_drop_, training());
}

}  // namespace vt::models
