// MitaAttention: the qkv(g) projection, the MiTA core (models/mita.cpp), the optional DWC and SiLU gate, proj.
#include "models/mita_attention.h"

#include <cmath>

#include "autograd/node.h"
#include "nn/autocast.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace vt::models {

DepthwiseConv3x3::DepthwiseConv3x3(int64_t channels, Generator& gen) {
  weight = register_parameter("weight", Tensor::empty({channels, 1, 3, 3}));
  bias = register_parameter("bias", Tensor::empty({channels}));
  nn::init::default_uniform(weight, 9, gen);  // fan_in = (C / groups) · 3 · 3
  nn::init::default_uniform(bias, 9, gen);
}

std::pair<Tensor, Tensor> DepthwiseConv3x3::parameters_as(DType dtype) const {
  // Under autocast x arrives in bf16; the f32 master weights follow it (as Linear's do).
  if (dtype == weight.dtype()) return {weight, bias};
  return {nn::cast_to(weight, dtype), nn::cast_to(bias, dtype)};
}

Tensor DepthwiseConv3x3::forward(const Tensor& x) const {
  const auto [w, b] = parameters_as(x.dtype());
  return ops::depthwise_conv2d(x, w, b);
}

MitaOptions mita_options(const AttentionConfig& cfg, int64_t heads, int64_t registers) {
  VT_CHECK(cfg.is_mita(), "[model] model.attention.type '", cfg.type,
           "' is not a MiTA kind (mita | mita_route | mita_compress)");
  MitaOptions o;
  o.heads = heads;
  o.route_only = cfg.type == "mita_route";
  o.compress_only = cfg.type == "mita_compress";
  o.m = cfg.m;
  o.k = cfg.k != 0 ? cfg.k : (o.route_only ? 2 * cfg.m : cfg.m);
  o.s = cfg.s;
  o.landmark_pool = cfg.landmark_pool;
  o.registers = registers;
  o.shared_scale = cfg.shared_scale;
  o.impl = cfg.impl;
  o.deterministic = cfg.deterministic;
  VT_CHECK(o.m >= 1, "[model] model.attention.m must be at least 1, got ", o.m);
  VT_CHECK(cfg.k >= 0, "[model] model.attention.k must be positive (or 0 for the default), got ", cfg.k);
  VT_CHECK(o.s >= 1 && o.s <= o.m, "[model] model.attention.s = ", o.s,
           " experts per query must be in [1, model.attention.m = ", o.m, "]");
  VT_CHECK(o.landmark_pool == "shifted" || o.landmark_pool == "patches" || o.landmark_pool == "sequence" ||
               o.landmark_pool == "random",
           "[model] model.attention.landmark_pool must be 'shifted', 'patches', 'sequence' or 'random', got '",
           o.landmark_pool, "'");
  VT_CHECK(o.impl == "fused" || o.impl == "reference",
           "[model] model.attention.impl must be 'fused' or 'reference', got '", o.impl, "'");
  VT_CHECK(o.shared_scale == "official" || o.shared_scale == "paper",
           "[model] model.attention.shared_scale must be 'official' or 'paper', got '", o.shared_scale, "'");
  return o;
}

MitaAttention::MitaAttention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double proj_drop, Generator& gen,
                             const Vit5Attention& vit5)
    : opt_(mita_options(cfg, heads, vit5.enabled ? vit5.registers : 0)),
      dim_(dim),
      gate_(cfg.gate),
      proj_drop_(proj_drop) {
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  if (gate_) qkvg = register_module("qkvg", std::make_shared<nn::Linear>(dim, 4 * dim, true, gen));
  else qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, !vit5.enabled, gen));
  init_vit5(vit5, dim, heads);
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
  // The official DeiT code swaps MiTA in after timm initialised the ViT, so qkv(g)/proj keep PyTorch's default
  // init; ViT-5 builds it inside the model, whose init (trunc_normal(0.02)) they keep.
  if (!vit5.enabled) {
    init_linear_pytorch_default(gate_ ? *qkvg : *qkv, gen);
    init_linear_pytorch_default(*proj, gen);
  }
  if (cfg.dwc) dwc = register_module("dwc", std::make_shared<DepthwiseConv3x3>(dim, gen));
}

Tensor MitaAttention::forward(const Tensor& x) const { return forward(x, nullptr); }

Tensor MitaAttention::forward(const Tensor& x, MitaDebug* debug) const {
  VT_CHECK(x.dim() == 3 && x.size(2) == dim_, "[mita] expected input [B, N, ", dim_, "], got ", x.describe());
  const int64_t B = x.size(0), N = x.size(1), C = dim_, R = opt_.registers;
  const int64_t G = square_grid(N, R), P = G * G;
  VT_CHECK(!dwc || G > 0, "[mita] model.attention.dwc needs the ", N - 1 - R,
           " patch tokens after CLS to form a square patch grid (G^2), got N = ", N);
  // [B, N, 3C] (or 4C) holds q, k, v (, g) on the last dim: timm's reshape(B, N, 3, C) layout.
  const Tensor projected = vit5_qk(gate_ ? qkvg->forward(x) : qkv->forward(x));
  Tensor out;
  // The packed op's DWC covers tokens 1..N-1: with registers after the patches the DWC is added below instead.
  const bool packed_dwc = dwc && R == 0;
  if (!debug) {  // training, and short-sequence inference: one op for the core, the DWC and the gate
    const auto [w, b] = packed_dwc ? dwc->parameters_as(projected.dtype()) : std::pair<Tensor, Tensor>{};
    out = mita_core_packed(projected, opt_, w, b, gate_);
  }
  const Tensor v = projected.slice(2, 2 * C, 3 * C);
  auto add_dwc = [&](const Tensor& core) {
    // Patch tokens V[:, 1:1+G²] as (B, C, G, G) in their true places (no shift here), conv, added there.
    Tensor grid = v.slice(1, 1, 1 + P).transpose(1, 2).reshape({B, C, G, G});
    Tensor conv = dwc->forward(grid).reshape({B, C, P}).transpose(1, 2);
    std::vector<Tensor> parts = {core.slice(1, 0, 1), core.slice(1, 1, 1 + P) + conv};
    if (R > 0) parts.push_back(core.slice(1, 1 + P, N));
    return ops::concat(parts, 1);
  };
  if (out.defined() && dwc && !packed_dwc) out = add_dwc(out);
  if (!out.defined()) {
    out = mita_core(projected.slice(2, 0, C), projected.slice(2, C, 2 * C), v, opt_, debug);
    if (dwc) out = add_dwc(out);
    if (gate_) out = ops::silu_gate(out, projected.slice(2, 3 * C, 4 * C));
  }
  return ops::dropout(proj->forward(out), proj_drop_, training());
}

std::shared_ptr<Attention> make_mita_attention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double proj_drop,
                                               Generator& gen, const Vit5Attention& vit5) {
  return std::make_shared<MitaAttention>(cfg, dim, heads, proj_drop, gen, vit5);
}

}  // namespace vt::models
