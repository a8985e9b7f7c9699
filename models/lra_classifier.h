// The Long Range Arena classifiers (Nystromformer's LRA code, which the MiTA paper's Table 5 follows): token ids
// [B, N] (0 = padding) → token embedding + learned position embedding → dropout → SequenceTransformer (pre-norm
// blocks of any attention kind, final LayerNorm) → pooling → an MLP head Linear(D, hidden) → ReLU →
// Linear(hidden, classes). Pooling is the mean over the non-padding tokens (Nystromformer's code zeroes the padding
// outputs but divides by the padded length; this is the true mean), or the CLS token (Nystromformer's append_cls:
// id vocab_size put first, the last token dropped, so N stays the same). Attention sees the padding tokens (no key
// mask: the MiTA and Agent kernels take none). Linear layers start from torch's default init, as Nystromformer's. Retrieval is the dual form:
// both documents of a pair [B, 2, N] go through the same encoder and the head sees [u, v, u·v, u − v].
#pragma once
#include <memory>
#include <string>

#include "models/sequence_model.h"

namespace vt::models {

struct LraConfig {
  SequenceConfig encoder;  ///< dim, depth, heads, mlp_ratio, layer_norm_eps, drop_rate, attention, seed
  int64_t vocab_size = 0;  ///< token ids are < vocab_size (0 = padding included)
  int64_t max_length = 0;  ///< rows of the position embedding: the longest N the model takes
  int64_t num_classes = 0;
  int64_t head_hidden = 0;       ///< the head's hidden width (Nystromformer: transformer_hidden_dim, the MLP's)
  std::string pooling = "mean";  ///< mean (over the non-padding tokens) | cls
  bool dual = false;             ///< Retrieval: a pair of documents per example
};

/// Linear(in, hidden) → ReLU → Linear(hidden, classes) (Nystromformer's SCHead / SCHeadDual mlpblock).
class LraHead : public nn::Module {
 public:
  LraHead(int64_t in, int64_t hidden, int64_t classes, Generator& gen);
  Tensor forward(const Tensor& x) const;
  std::shared_ptr<nn::Linear> fc1, fc2;
};

class LraClassifier : public nn::Module {
 public:
  explicit LraClassifier(const LraConfig& cfg);
  /// tokens i64 [B, N] (N <= max_length), or [B, 2, N] for the dual form → logits [B, num_classes].
  Tensor forward(const Tensor& tokens) const;
  /// One document per row: tokens [B, N] → pooled features [B, D] (the parameters' dtype).
  Tensor features(const Tensor& tokens) const;
  const LraConfig& config() const { return cfg_; }

  Tensor token_embed, pos_embed;  ///< [vocab_size (+1 with CLS pooling), D], [max_length, D]
  std::shared_ptr<SequenceTransformer> encoder;
  std::shared_ptr<LraHead> head;

 private:
  LraConfig cfg_;
};

/// The dual encoder's head input [u, v, u·v, u − v] along the last dim: u, v [B, D] → [B, 4D].
Tensor dual_features(const Tensor& u, const Tensor& v);

/// The mean of h [B, N, D] over the tokens whose id is not 0 (tokens i64 [B, N]); a row without any counts as one
/// token (its features are 0). In h's dtype.
Tensor masked_mean(const Tensor& h, const Tensor& tokens);

}  // namespace vt::models
