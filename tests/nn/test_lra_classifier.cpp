// The Long Range Arena classifier (models/lra_classifier.h): a finite-difference gradcheck in f64 of the whole
// model (embeddings, blocks, pooling, head) with each attention kind of Table 5, the CLS and dual forms; the dual
// head's features [u, v, u·v, u − v] and the mean over the non-padding tokens against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>

#include "autograd/gradcheck.h"
#include "models/agent_attention.h"
#include "models/lra_classifier.h"
#include "models/mita_attention.h"
#include "autograd/node.h"
#include "ops/ops.h"
#include "tests/nn/mita_test_util.h"

namespace vt::test {
namespace {

using models::LraClassifier;
using models::LraConfig;

constexpr int64_t kVocab = 7, kLength = 12, kDim = 8, kClasses = 3;

LraConfig tiny_config(const std::string& kind, const std::string& pooling = "mean", bool dual = false) {
  LraConfig c;
  c.encoder.dim = kDim, c.encoder.depth = 1, c.encoder.heads = 2, c.encoder.mlp_ratio = 2.0;
  c.encoder.layer_norm_eps = 1e-5;
  c.encoder.attention.type = kind;
  if (kind == "mita" || kind == "mita_route") {
    c.encoder.attention.m = 3;
    c.encoder.attention.k = kind == "mita" ? 3 : 6;  // route-only: k = 2m
    c.encoder.attention.landmark_pool = "sequence";
  }
  if (kind == "agent") c.encoder.attention.agent_num = 3, c.encoder.attention.landmark_pool = "sequence";
  c.vocab_size = kVocab, c.max_length = kLength, c.num_classes = kClasses, c.head_hidden = 16;
  c.pooling = pooling;
  c.dual = dual;
  return c;
}

// Every parameter of the model as the member its forward reads, in a fixed order.
std::vector<Tensor*> parameter_slots(LraClassifier& m) {
  std::vector<Tensor*> s = {&m.token_embed, &m.pos_embed};
  auto linear = [&](nn::Linear& l) { s.push_back(&l.weight), s.push_back(&l.bias); };
  auto norm = [&](nn::LayerNorm& n) { s.push_back(&n.weight), s.push_back(&n.bias); };
  for (auto& b : m.encoder->blocks) {
    norm(dynamic_cast<nn::LayerNorm&>(*b->norm1));
    if (auto* d = dynamic_cast<models::DenseAttention*>(b->attn.get())) linear(*d->qkv), linear(*d->proj);
    if (auto* x = dynamic_cast<models::MitaAttention*>(b->attn.get())) linear(*x->qkv), linear(*x->proj);
    if (auto* a = dynamic_cast<models::AgentAttention*>(b->attn.get())) linear(*a->qkv), linear(*a->proj);
    norm(dynamic_cast<nn::LayerNorm&>(*b->norm2));
    linear(*b->mlp->fc1), linear(*b->mlp->fc2);
  }
  norm(*m.encoder->norm);
  linear(*m.head->fc1), linear(*m.head->fc2);
  return s;
}

// Token ids with padding at the ends of the rows (row 1 is half padding); [B, 2, N] for the dual form.
Tensor tokens_for(bool dual) {
  std::vector<double> ids;
  for (int64_t doc = 0; doc < (dual ? 4 : 2); ++doc)
    for (int64_t i = 0; i < kLength; ++i) {
      const int64_t used = doc % 2 == 0 ? kLength - 1 : kLength / 2;
      ids.push_back(i < used ? static_cast<double>(1 + (i * 5 + doc * 3) % (kVocab - 1)) : 0.0);
    }
  return Tensor::from_vector(ids, dual ? Shape{2, 2, kLength} : Shape{2, kLength}, DType::i64);
}

void gradcheck_model(const LraConfig& cfg, uint64_t seed) {
  LraClassifier model(cfg);
  model.eval();
  const std::vector<Tensor*> slots = parameter_slots(model);
  ASSERT_EQ(model.named_parameters().size(), slots.size()) << "a parameter has no slot";
  std::vector<Tensor> inputs;
  for (Tensor* t : slots) {
    Tensor v = randn_t(t->shape(), seed + inputs.size(), 0.5);
    if (t->dim() == 1 && (t == &model.encoder->norm->weight || t == &model.encoder->blocks[0]->norm1->weight ||
                          t == &model.encoder->blocks[0]->norm2->weight))
      v = v + 1.0;  // norm weights around 1
    inputs.push_back(v);
  }
  const Tensor tokens = tokens_for(cfg.dual);
  auto fn = [&](const std::vector<Tensor>& in) {
    for (size_t i = 0; i < slots.size(); ++i) *slots[i] = in[i];
    return model.forward(tokens);
  };
  const GradcheckResult r = gradcheck(fn, inputs);
  EXPECT_TRUE(r.ok) << cfg.encoder.attention.type << " " << cfg.pooling << (cfg.dual ? " dual" : "") << ": " << r.detail
                    << " (inputs: the parameters in parameter_slots order)";
}

TEST(LraClassifierGrad, Dense) { gradcheck_model(tiny_config("dense"), 100); }
TEST(LraClassifierGrad, Mita) { gradcheck_model(tiny_config("mita"), 200); }
TEST(LraClassifierGrad, RouteOnlyMita) { gradcheck_model(tiny_config("mita_route"), 300); }
TEST(LraClassifierGrad, Agent) { gradcheck_model(tiny_config("agent"), 400); }
TEST(LraClassifierGrad, ClsPooling) { gradcheck_model(tiny_config("dense", "cls"), 500); }
TEST(LraClassifierGrad, DualEncoder) { gradcheck_model(tiny_config("dense", "mean", true), 600); }

TEST(LraClassifier, DualFeaturesAreUVProductAndDifference) {
  const Tensor u = Tensor::from_vector({1, 2, -0.5, 4}, {2, 2}, DType::f64);
  const Tensor v = Tensor::from_vector({3, -1, 2, 0.25}, {2, 2}, DType::f64);
  const std::vector<double> want = {1,    2, 3, -1,   3,  -2, -2,   3,      // [u, v, u·v, u − v] of row 0
                                    -0.5, 4, 2, 0.25, -1, 1,  -2.5, 3.75};  // and row 1
  EXPECT_EQ(models::dual_features(u, v).to_vector(), want);
}

TEST(LraClassifier, MeanPoolingSkipsThePadding) {
  // Row 0: tokens 3, 0, 5, 0 → the mean of positions 0 and 2; row 1: all padding → zeros (one token counted).
  const Tensor h = Tensor::from_vector({1, 10, 7, 70, 3, 30, 9, 90,  //
                                        2, 4, 6, 8, 1, 3, 5, 7},
                                       {2, 4, 2}, DType::f64);
  const Tensor tokens = Tensor::from_vector({3, 0, 5, 0, 0, 0, 0, 0}, {2, 4}, DType::i64);
  EXPECT_EQ(models::masked_mean(h, tokens).to_vector(), (std::vector<double>{2, 20, 0, 0}));
  const Tensor full = Tensor::from_vector({1, 1, 1, 1, 6, 6, 6, 6}, {2, 4}, DType::i64);
  EXPECT_EQ(models::masked_mean(h, full).to_vector(), (std::vector<double>{5, 50, 3.5, 5.5}));
}

TEST(LraClassifier, ModelWithPaddingTokensPoolsOnlyTheRealOnes) {
  // The whole model: the logits of a row equal the head applied to the mean of its non-padding encoder outputs.
  LraClassifier model(tiny_config("dense"));
  model.eval();
  const Tensor tokens = tokens_for(false);
  NoGradGuard no_grad;
  const int64_t N = kLength;
  Tensor x = ops::index_select(model.token_embed, 0, tokens.reshape({2 * N})).reshape({2, N, kDim}) +
             model.pos_embed.slice(0, 0, N);
  const Tensor h = model.encoder->forward(x);
  const Tensor first = ops::mean(h.slice(0, 1, 2).slice(1, 0, N / 2), {1});  // row 1 has N/2 real tokens
  const std::vector<double> want = model.head->forward(first).to_vector(), got = model.forward(tokens).to_vector();
  for (int64_t c = 0; c < kClasses; ++c) EXPECT_NEAR(got[static_cast<size_t>(kClasses + c)], want[c], 1e-5) << c;
}

TEST(LraClassifier, LinearLayersStartFromTorchsDefaultInit) {
  // U(±1/√in) for every encoder weight and bias, spread to near the bound (timm's trunc_normal(0.02) stays far
  // inside it: 1/√64 = 0.125), for each kind (MiTA and Agent re-draw their qkv/proj themselves).
  for (const std::string kind : {"dense", "mita", "agent"}) {
    LraConfig c = tiny_config(kind);
    c.encoder.dim = 64, c.max_length = 64;
    c.encoder.attention.m = c.encoder.attention.k = c.encoder.attention.agent_num = 8;
    const LraClassifier model(c);
    std::map<std::string, int64_t> fan_in;
    for (const auto& [name, t] : model.encoder->named_parameters())
      if (t.dim() == 2) fan_in[name.substr(0, name.size() - 7)] = t.size(1);
    ASSERT_EQ(fan_in.size(), 4u) << kind;  // qkv, proj, fc1, fc2
    for (const auto& [name, t] : model.encoder->named_parameters()) {
      const std::string layer = name.substr(0, name.rfind('.'));
      if (!fan_in.count(layer)) continue;  // LayerNorm
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in[layer]));
      double largest = 0;
      for (double v : t.to_vector()) largest = std::max(largest, std::abs(v));
      EXPECT_LE(largest, bound) << kind << " " << name;
      if (t.dim() == 2) {
        EXPECT_GT(largest, 0.9 * bound) << kind << " " << name;
      }
    }
  }
}

TEST(LraClassifier, BadTokensAreErrorsNamingTheShape) {
  LraClassifier model(tiny_config("dense"));
  const Tensor too_long = Tensor::zeros({1, kLength + 1}, DType::i64);
  expect_error([&] { model.forward(too_long); }, "data.max_length");
  expect_error([&] { model.forward(Tensor::zeros({1, 4}, DType::f32)); }, "i64 token ids");
  LraClassifier dual(tiny_config("dense", "mean", true));
  expect_error([&] { dual.forward(Tensor::zeros({1, 4}, DType::i64)); }, "[B, 2, N]");
}

}  // namespace
}  // namespace vt::test
