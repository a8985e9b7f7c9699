#include "models/attention.h"

#include <cmath>

#include "ops/ops.h"

namespace vt::models {

DenseAttention::DenseAttention(int64_t dim, int64_t heads, double attn_drop, double proj_drop, Generator& gen)
    : heads_(heads), attn_drop_(attn_drop), proj_drop_(proj_drop) {
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, true, gen));
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
}

Tensor DenseAttention::forward(const Tensor& x) const {
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2), d = C / heads_;
  // [B, N, 3C] → [3, B, H, N, d]: rows of qkv are [q; k; v], head h takes columns h·d..(h+1)·d of each.
  Tensor qkv_t = qkv->forward(x).reshape({B, N, 3, heads_, d}).permute({2, 0, 3, 1, 4});
  Tensor q = qkv_t.slice(0, 0, 1).squeeze(0), k = qkv_t.slice(0, 1, 2).squeeze(0), v = qkv_t.slice(0, 2, 3).squeeze(0);
  Tensor attn = ops::softmax(ops::matmul(q * (1.0 / std::sqrt(static_cast<double>(d))), k.transpose(-2, -1)), -1);
  attn = ops::dropout(attn, attn_drop_, training());
  Tensor out = ops::matmul(attn, v).transpose(1, 2).reshape({B, N, C});
  return ops::dropout(proj->forward(out), proj_drop_, training());
}

std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double drop,
                                          Generator& gen) {
  if (cfg.type == "dense") return std::make_shared<DenseAttention>(dim, heads, 0.0, drop, gen);
  VT_FAIL("[model] unknown model.attention.type '", cfg.type, "' (known: dense)");
}

}  // namespace vt::models
