// The CBT decoder of MiTA's Table 4 (spec §5): Segmenter's mask transformer whose blocks are CBSA
// (contract-and-broadcast self-attention) layers, from QishuaiWen/CBSA. Parameter names follow the official
// MaskTransformer so weights can be exchanged: cls_emb, net.layers.N.norm, net.layers.N.fn.{proj, step_x, step_rep,
// to_out}, decoder_norm, mask_norm.
#pragma once
#include <memory>
#include <vector>

#include "core/rng.h"
#include "models/seg_decoder.h"
#include "nn/layers.h"

namespace vt::models {

/// One CBSA attention (`fn`): W = proj(x); representatives = W's patch tokens adaptive-average-pooled to
/// reps_grid²; per head h: A = softmax(Rep·W_hᵀ/√d), Rep ← Rep + step_rep[h]·A·W_h,
/// Z = softmax(Rep·Repᵀ/√d)·Rep, Δ = step_x[h]·Aᵀ·Z; heads concatenated → to_out.
class CbsaAttention : public nn::Module {
 public:
  CbsaAttention(int64_t dim, int64_t heads, int64_t head_dim, int64_t reps_grid, Generator& gen);
  /// x [B, n, D] whose first grid² tokens are the patch grid (row-major) → Δ [B, n, D]. The products and
  /// softmaxes run in the parameters' dtype (f32; f64 in gradchecks) also under bf16 autocast.
  Tensor forward(const Tensor& x, int64_t grid) const;

  std::shared_ptr<nn::Linear> proj;    ///< Linear(D → heads·head_dim, no bias)
  Tensor step_x, step_rep;             ///< [heads, 1, 1], N(0, 1)
  std::shared_ptr<nn::Linear> to_out;  ///< Linear(heads·head_dim → D)

 private:
  int64_t heads_, head_dim_, reps_grid_;
};

/// x ← x + fn(norm(x)) (official PreNorm; no MLP).
class CbsaLayer : public nn::Module {
 public:
  CbsaLayer(int64_t dim, int64_t heads, int64_t head_dim, int64_t reps_grid, Generator& gen);
  /// The residual update x + fn(norm(x)) of x [B, n, D].
  Tensor forward(const Tensor& x, int64_t grid) const;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<CbsaAttention> fn;
};

struct CbtDecoderConfig {
  int64_t dim = 192, num_classes = 150, layers = 3, heads = 3, head_dim = 100, reps_grid = 10;
};

class CbtDecoder : public MaskDecoder {
 public:
  CbtDecoder(const CbtDecoderConfig& cfg, Generator& gen);
  /// patches [B, G², D] → masks [B, K, G, G]: class embeddings appended after the patches, CBSA layers,
  /// decoder_norm, patch and class tokens L2-normalised, masks = P·Clᵀ, mask_norm over the K classes.
  /// f32 masks for f32/bf16 input (f64 for f64). The grid must be square (the representatives pool a G×G grid).
  Tensor forward(const Tensor& patches, int64_t grid_h, int64_t grid_w) const override;
  const CbtDecoderConfig& config() const { return cfg_; }

  Tensor cls_emb;  ///< [1, K, D], trunc_normal(.02)
  std::vector<std::shared_ptr<CbsaLayer>> layers;
  std::shared_ptr<nn::LayerNorm> decoder_norm, mask_norm;

 private:
  CbtDecoderConfig cfg_;
};

}  // namespace vt::models
