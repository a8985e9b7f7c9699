// CBT decoder (spec §5). Op order as the official MaskTransformer / CBSA Attention; the representatives are the
// adaptive average pool of W's patch tokens (ops::mita_landmark_pool with a 2-D grid, row-major bins).
#include "models/cbt_decoder.h"

#include <cmath>

#include "core/error.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace vt::models {

namespace {
constexpr double kTorchLayerNormEps = 1e-5;  // nn.LayerNorm's default, which every decoder norm uses

// Holds children under "0", "1", ... as nn.ModuleList does.
struct ModuleList : nn::Module {
  template <typename M>
  void add(const std::shared_ptr<M>& m) {
    register_module(std::to_string(count++), m);
  }
  int count = 0;
};
// The official Transformer wrapper: net.layers.N.
struct Net : nn::Module {
  Net() { layers = register_module("layers", std::make_shared<ModuleList>()); }
  std::shared_ptr<ModuleList> layers;
};
}  // namespace

CbsaAttention::CbsaAttention(int64_t dim, int64_t heads, int64_t head_dim, int64_t reps_grid, Generator& gen)
    : heads_(heads), head_dim_(head_dim), reps_grid_(reps_grid) {
  VT_CHECK(dim > 0 && heads > 0 && head_dim > 0 && reps_grid > 0,
           "[cbt] dim, heads, head_dim and reps_grid must "
           "be positive, got ",
           dim, ", ", heads, ", ", head_dim, ", ", reps_grid);
  const int64_t inner = heads * head_dim;
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, inner, false, gen));
  // Registered in the official order (step_x, step_rep after proj, then to_out); torch.randn, never re-initialised.
  step_x = register_parameter("step_x", Tensor::empty({heads, 1, 1}));
  step_rep = register_parameter("step_rep", Tensor::empty({heads, 1, 1}));
  ops::normal_(step_x, 0.0, 1.0, gen);
  ops::normal_(step_rep, 0.0, 1.0, gen);
  to_out = register_module("to_out", std::make_shared<nn::Linear>(inner, dim, true, gen));
}

Tensor CbsaAttention::forward(const Tensor& x, int64_t grid) const {
  VT_CHECK(x.dim() == 3 && x.size(1) >= grid * grid, "[cbt] x must be [B, n >= ", grid * grid, ", D], got ",
           to_string(x.shape()));
  const int64_t B = x.size(0), n = x.size(1), H = heads_, d = head_dim_, m = reps_grid_ * reps_grid_;
  Tensor w = proj->forward(x);  // [B, n, H·d]; bf16 under autocast
  // Contract and broadcast in the parameters' dtype: the softmax logits and the tiny products stay f32 under
  // autocast (the decoder is ~1% of the model's MACs).
  if (w.dtype() != step_x.dtype()) w = w.to(step_x.dtype());
  Tensor rep = ops::mita_landmark_pool(w, 0, grid * grid, grid, m);  // [B, m, H·d]
  const Tensor w_h = w.reshape({B, n, H, d}).permute({0, 2, 1, 3});  // [B, H, n, d]
  Tensor rep_h = rep.reshape({B, m, H, d}).permute({0, 2, 1, 3});    // [B, H, m, d]
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const Tensor attn = ops::softmax(ops::matmul(rep_h, w_h.transpose(2, 3)) * scale, -1);    // A [B, H, m, n]
  rep_h = rep_h + step_rep * ops::matmul(attn, w_h);                                        // contract
  const Tensor self = ops::softmax(ops::matmul(rep_h, rep_h.transpose(2, 3)) * scale, -1);  // [B, H, m, m]
  const Tensor z = ops::matmul(self, rep_h);                                                // [B, H, m, d]
  const Tensor delta = step_x * ops::matmul(attn.transpose(2, 3), z);                       // broadcast [B, H, n, d]
  return to_out->forward(delta.permute({0, 2, 1, 3}).reshape({B, n, H * d}));
}

CbsaLayer::CbsaLayer(int64_t dim, int64_t heads, int64_t head_dim, int64_t reps_grid, Generator& gen) {
  norm = register_module("norm", std::make_shared<nn::LayerNorm>(dim, kTorchLayerNormEps));
  fn = register_module("fn", std::make_shared<CbsaAttention>(dim, heads, head_dim, reps_grid, gen));
}

Tensor CbsaLayer::forward(const Tensor& x, int64_t grid) const { return x + fn->forward(norm->forward(x), grid); }

CbtDecoder::CbtDecoder(const CbtDecoderConfig& cfg, Generator& gen) : cfg_(cfg) {
  VT_CHECK(cfg.dim > 0 && cfg.num_classes > 0 && cfg.layers > 0,
           "[cbt] dim, num_classes and layers must be "
           "positive, got ",
           cfg.dim, ", ", cfg.num_classes, ", ", cfg.layers);
  cls_emb = register_parameter("cls_emb", Tensor::empty({1, cfg.num_classes, cfg.dim}));
  nn::init::trunc_normal(cls_emb, 0.02, gen);
  auto net = register_module("net", std::make_shared<Net>());
  for (int64_t i = 0; i < cfg.layers; ++i) {
    layers.push_back(std::make_shared<CbsaLayer>(cfg.dim, cfg.heads, cfg.head_dim, cfg.reps_grid, gen));
    net->layers->add(layers.back());
  }
  decoder_norm = register_module("decoder_norm", std::make_shared<nn::LayerNorm>(cfg.dim, kTorchLayerNormEps));
  mask_norm = register_module("mask_norm", std::make_shared<nn::LayerNorm>(cfg.num_classes, kTorchLayerNormEps));
}

Tensor CbtDecoder::forward(const Tensor& patches, int64_t grid_h, int64_t grid_w) const {
  const int64_t Np = grid_h * grid_w, K = cfg_.num_classes;
  VT_CHECK(grid_h == grid_w, "[cbt] the patch grid must be square, got ", grid_h, "x", grid_w);
  VT_CHECK(patches.dim() == 3 && patches.size(1) == Np && patches.size(2) == cfg_.dim, "[cbt] patches must be [B, ", Np,
           ", ", cfg_.dim, "], got ", to_string(patches.shape()));
  const int64_t B = patches.size(0);
  // The residual stream in the parameters' dtype (f32), as torch.cat promotes the bf16 encoder output.
  Tensor x = patches.dtype() == cls_emb.dtype() ? patches : patches.to(cls_emb.dtype());
  x = ops::concat({x, cls_emb.expand({B, K, cfg_.dim})}, 1);  // [B, Np + K, D]: classes after the patches
  for (const auto& layer : layers) x = layer->forward(x, grid_h);
  // Explicit output dtype: f32 under autocast too, so the normalised products and mask_norm see f32 inputs.
  x = ops::layer_norm(x, decoder_norm->weight, decoder_norm->bias, decoder_norm->eps, x.dtype());
  const Tensor p = ops::l2_normalize(x.slice(1, 0, Np));        // [B, Np, D]
  const Tensor cl = ops::l2_normalize(x.slice(1, Np, Np + K));  // [B, K, D]
  Tensor masks = ops::matmul(p, cl.transpose(1, 2));            // [B, Np, K]
  masks = ops::layer_norm(masks, mask_norm->weight, mask_norm->bias, mask_norm->eps, masks.dtype());
  return masks.transpose(1, 2).reshape({B, K, grid_h, grid_w});
}

}  // namespace vt::models
