// SequenceTransformer (Figure 5): a stack of the ViT's Block over given tokens, plus the MiTA budget rule;
// SequenceClassifier: its mean-pooled features through a linear head.
#include "models/sequence_model.h"

#include <algorithm>
#include <cmath>

#include "ops/ops.h"

namespace vt::models {

namespace {
// Holds the blocks so their keys read blocks.0..., as in the ViT.
struct SequenceBlockList : nn::Module {
  void add(const std::shared_ptr<Block>& b) { register_module(std::to_string(count++), b); }
  int count = 0;
};
}  // namespace

MitaBudget figure5_mita_budget(int64_t N) {
  VT_CHECK(N >= 1, "[model] figure5_mita_budget needs N >= 1, got ", N);
  const double side = std::sqrt(static_cast<double>(N) / 4.0);
  int64_t mk = std::max<int64_t>(1, std::llround(side));
  if ((N & (N - 1)) == 0 && side >= 1.0) mk = int64_t{1} << std::llround(std::log2(side));  // N = 2^j
  mk = std::min(mk, N);
  return {mk, mk};
}

SequenceConfig figure5_config(const std::string& kind, int64_t N, const std::string& impl) {
  VT_CHECK(kind == "dense" || kind == "mita", "[model] figure5_config: kind must be dense or mita, got '", kind, "'");
  SequenceConfig cfg;
  cfg.attention.type = kind;
  if (kind == "mita") {
    const MitaBudget b = figure5_mita_budget(N);
    cfg.attention.m = b.m, cfg.attention.k = b.k;
    cfg.attention.landmark_pool = "sequence";
    cfg.attention.impl = impl;
  }
  return cfg;
}

SequenceTransformer::SequenceTransformer(const SequenceConfig& cfg) : cfg_(cfg) {
  VT_CHECK(cfg.dim > 0 && cfg.depth > 0 && cfg.heads > 0,
           "[model] sequence model: dim, depth and heads must be "
           "positive, got ",
           cfg.dim, ", ", cfg.depth, ", ", cfg.heads);
  ViTConfig block_cfg;  // patch_size 0: no patch grid, so the blocks accept any N
  block_cfg.patch_size = 0;
  block_cfg.embed_dim = cfg.dim, block_cfg.num_heads = cfg.heads;
  block_cfg.mlp_ratio = cfg.mlp_ratio, block_cfg.layer_norm_eps = cfg.layer_norm_eps;
  block_cfg.drop_rate = cfg.drop_rate;
  block_cfg.attention = cfg.attention;
  Generator gen(cfg.seed);
  auto list = register_module("blocks", std::make_shared<SequenceBlockList>());
  for (int64_t i = 0; i < cfg.depth; ++i) {
    blocks.push_back(std::make_shared<Block>(block_cfg, 0.0, gen));
    list->add(blocks.back());
  }
  norm = register_module("norm", std::make_shared<nn::LayerNorm>(cfg.dim, cfg.layer_norm_eps));
}

Tensor SequenceTransformer::forward(const Tensor& x) const {
  VT_CHECK(x.dim() == 3 && x.size(2) == cfg_.dim, "[model] sequence model: expected x [B, N, ", cfg_.dim, "], got ",
           x.describe());
  Tensor h = x;
  for (const auto& b : blocks) h = b->forward(h);
  return norm->forward(h);
}

SequenceClassifier::SequenceClassifier(const SequenceConfig& cfg, int64_t num_classes) {
  VT_CHECK(num_classes > 0, "[model] sequence classifier: num_classes must be positive, got ", num_classes);
  encoder = register_module("encoder", std::make_shared<SequenceTransformer>(cfg));
  Generator gen(cfg.seed + 1);
  head = register_module("head", std::make_shared<nn::Linear>(cfg.dim, num_classes, true, gen));
}

Tensor SequenceClassifier::forward(const Tensor& x) const { return head->forward(ops::mean(encoder->forward(x), {1})); }

}  // namespace vt::models
