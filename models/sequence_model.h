// The paper's Figure 5 long-sequence model: already-embedded tokens x [B, N, D] (no CLS token, no position
// embedding) → `depth` pre-norm ViT blocks (models::Block) → a final LayerNorm. Its MiTA variant pools all N
// tokens 1-D into m landmarks (landmark_pool "sequence"), with the budget m·k ≈ N/4 of figure5_mita_budget.
// SequenceClassifier adds what a training benchmark needs (as LRA's classifiers): mean pooling and a linear head.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "models/vit.h"

namespace vt::models {

struct SequenceConfig {
  int64_t dim = 128, depth = 3, heads = 2;
  double mlp_ratio = 4.0, layer_norm_eps = 1e-6;
  double drop_rate = 0.0;     // dropout after the attention projection and in the MLP (ViTConfig::drop_rate)
  AttentionConfig attention;  // dense by default
  uint64_t seed = 0;          // initialisation stream
};

/// MiTA's landmark count m and keys per landmark k for a sequence of N tokens.
struct MitaBudget {
  int64_t m = 1, k = 1;
};

/// Figure 5's budget m = k ≈ √(N/4), so m·k ≈ N/4: a power of two when N is one (1K → 16, 16K → 64,
/// 1M → 512), else round(√(N/4)); at least 1 and at most N.
MitaBudget figure5_mita_budget(int64_t N);

/// Figure 5's configuration (D 128, 3 blocks, 2 heads, MLP ratio 4) for `kind` "dense" or "mita" at N tokens;
/// mita gets figure5_mita_budget(N) and landmark_pool "sequence", `impl` picks the MiTA implementation.
SequenceConfig figure5_config(const std::string& kind, int64_t N, const std::string& impl = "fused");

class SequenceTransformer : public nn::Module {
 public:
  explicit SequenceTransformer(const SequenceConfig& cfg);
  /// x [B, N, D] → [B, N, D] after the final norm; the residual stream keeps x's dtype (f32 under autocast).
  Tensor forward(const Tensor& x) const;
  const SequenceConfig& config() const { return cfg_; }

  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<nn::LayerNorm> norm;

 private:
  SequenceConfig cfg_;
};

/// SequenceTransformer → mean over the N tokens → linear head: x [B, N, D] → logits [B, num_classes].
class SequenceClassifier : public nn::Module {
 public:
  SequenceClassifier(const SequenceConfig& cfg, int64_t num_classes);
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<SequenceTransformer> encoder;
  std::shared_ptr<nn::Linear> head;
};

}  // namespace vt::models
