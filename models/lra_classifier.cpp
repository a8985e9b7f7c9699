// The LRA classifiers (see the header): embeddings, the shared SequenceTransformer, pooling and the MLP head.
#include "models/lra_classifier.h"

#include <map>

#include "models/attention.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace vt::models {

LraHead::LraHead(int64_t in, int64_t hidden, int64_t classes, Generator& gen) {
  fc1 = register_module("fc1", std::make_shared<nn::Linear>(in, hidden, true, gen));
  fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, classes, true, gen));
  init_linear_pytorch_default(*fc1, gen);  // torch's nn.Linear, as Nystromformer's head
  init_linear_pytorch_default(*fc2, gen);
}

Tensor LraHead::forward(const Tensor& x) const { return fc2->forward(ops::relu(fc1->forward(x))); }

LraClassifier::LraClassifier(const LraConfig& cfg) : cfg_(cfg) {
  VT_CHECK(cfg.vocab_size >= 2,
           "[model] LRA classifier: the vocabulary needs padding and at least one token, got "
           "vocab_size ",
           cfg.vocab_size);
  VT_CHECK(cfg.max_length >= 2, "[model] LRA classifier: data.max_length must be >= 2, got ", cfg.max_length);
  VT_CHECK(cfg.num_classes >= 2, "[model] LRA classifier: num_classes must be >= 2, got ", cfg.num_classes);
  VT_CHECK(cfg.head_hidden >= 1, "[model] LRA classifier: head_hidden must be >= 1, got ", cfg.head_hidden);
  VT_CHECK(cfg.pooling == "mean" || cfg.pooling == "cls", "[model] model.pooling must be mean or cls, got '",
           cfg.pooling, "'");
  check_attention_shape(cfg.encoder.attention, cfg.max_length);  // k, agent_num <= N: fail now, naming the key
  const int64_t D = cfg.encoder.dim;
  Generator gen(cfg.encoder.seed + 2);  // the encoder draws from seed, SequenceClassifier's head from seed + 1
  const int64_t rows = cfg.vocab_size + (cfg.pooling == "cls" ? 1 : 0);  // the CLS id is vocab_size
  token_embed = register_parameter("token_embed", Tensor::empty({rows, D}));
  pos_embed = register_parameter("pos_embed", Tensor::empty({cfg.max_length, D}));
  nn::init::trunc_normal(token_embed, 0.02, gen);  // Nystromformer: normal(0.02); ±2 bounds are 100σ away
  nn::init::trunc_normal(pos_embed, 0.02, gen);
  encoder = register_module("encoder", std::make_shared<SequenceTransformer>(cfg.encoder));
  // Nystromformer's model keeps torch's default nn.Linear init everywhere (the ViT blocks draw timm's
  // trunc_normal(0.02)): every `X.weight` [out, in] of the encoder and its `X.bias` ~ U(±1/√in).
  std::map<std::string, Tensor> params;
  for (const auto& [name, t] : encoder->named_parameters()) params.emplace(name, t);
  for (const auto& [name, t] : params) {
    if (t.dim() != 2 || name.size() < 7 || name.compare(name.size() - 7, 7, ".weight") != 0) continue;
    nn::init::default_uniform(t, t.size(1), gen);
    if (auto b = params.find(name.substr(0, name.size() - 7) + ".bias"); b != params.end())
      nn::init::default_uniform(b->second, t.size(1), gen);
  }
  head =
      register_module("head", std::make_shared<LraHead>(cfg.dual ? 4 * D : D, cfg.head_hidden, cfg.num_classes, gen));
}

Tensor masked_mean(const Tensor& h, const Tensor& tokens) {
  VT_CHECK(h.dim() == 3 && tokens.dim() == 2 && tokens.size(0) == h.size(0) && tokens.size(1) == h.size(1),
           "[model] masked_mean: h [B, N, D] and tokens [B, N] expected, got ", h.describe(), " and ",
           tokens.describe());
  // Ids are integers >= 0, so min(id, 1) = 1 - relu(1 - id) is 1 for a token and 0 for padding.
  const Tensor ids = tokens.to(h.dtype()).reshape({h.size(0), h.size(1), 1});
  const Tensor mask = ops::sub(1.0, ops::relu(ops::sub(1.0, ids)));
  const Tensor count = ops::sum(mask, {1});           // [B, 1]
  const Tensor denom = ops::relu(count - 1.0) + 1.0;  // max(count, 1)
  return ops::sum(h * mask, {1}) / denom;             // [B, D]
}

Tensor dual_features(const Tensor& u, const Tensor& v) {
  VT_CHECK(u.dim() == 2 && u.shape() == v.shape(), "[model] dual_features: u and v must be equal [B, D], got ",
           u.describe(), " and ", v.describe());
  return ops::concat({u, v, u * v, u - v}, 1);
}

Tensor LraClassifier::features(const Tensor& tokens) const {
  VT_CHECK(tokens.dim() == 2 && tokens.dtype() == DType::i64,
           "[model] LRA classifier: expected i64 token ids "
           "[B, N], got ",
           tokens.describe());
  const int64_t B = tokens.size(0), N = tokens.size(1), D = cfg_.encoder.dim;
  VT_CHECK(N >= 1 && N <= cfg_.max_length, "[model] LRA classifier: ", N, " tokens, the position embedding has ",
           cfg_.max_length, " (data.max_length)");
  Tensor ids = tokens;
  if (cfg_.pooling == "cls") {
    const Tensor cls = Tensor::full({B, 1}, static_cast<double>(cfg_.vocab_size), DType::i64, tokens.device());
    ids = ops::concat({cls, tokens.slice(1, 0, N - 1)}, 1).contiguous();
  }
  Tensor x = ops::index_select(token_embed, 0, ids.contiguous().reshape({B * N})).reshape({B, N, D});
  x = ops::dropout(x + pos_embed.slice(0, 0, N), cfg_.encoder.drop_rate, training());
  Tensor h = encoder->forward(x);
  if (h.dtype() != token_embed.dtype()) h = h.to(token_embed.dtype());  // the final norm's autocast output
  return cfg_.pooling == "cls" ? h.slice(1, 0, 1).squeeze(1) : masked_mean(h, ids);
}

Tensor LraClassifier::forward(const Tensor& tokens) const {
  if (!cfg_.dual) return head->forward(features(tokens));
  VT_CHECK(tokens.dim() == 3 && tokens.size(1) == 2,
           "[model] LRA dual classifier: expected token ids [B, 2, N], "
           "got ",
           tokens.describe());
  const int64_t B = tokens.size(0), N = tokens.size(2);
  // Both documents in one pass of the shared encoder: rows 0..B-1 are the first documents, B..2B-1 the second.
  const Tensor both = ops::concat({tokens.slice(1, 0, 1).reshape({B, N}), tokens.slice(1, 1, 2).reshape({B, N})}, 0);
  const Tensor f = features(both.contiguous());
  return head->forward(dual_features(f.slice(0, 0, B), f.slice(0, B, 2 * B)));
}

}  // namespace vt::models
