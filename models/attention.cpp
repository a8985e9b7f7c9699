#include "models/attention.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "models/agent_attention.h"
#include "models/focused_linear_attention.h"
#include "models/inline_attention.h"
#include "models/linear_attention.h"
#include "models/mhla_attention.h"
#include "models/mita_attention.h"
#include "models/pola_attention.h"
#include "nn/init.h"
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
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Tensor qkv_out = qkv->forward(x);  // [B, N, 3C]: [q; k; v], head h takes columns h·d..(h+1)·d of each
  Tensor out;
  if (attn_drop_ > 0 && training()) {  // dropout on the probabilities needs them materialised
    Tensor t = qkv_out.reshape({B, N, 3, heads_, d}).permute({2, 0, 3, 1, 4});
    Tensor q = t.slice(0, 0, 1).squeeze(0), k = t.slice(0, 1, 2).squeeze(0), v = t.slice(0, 2, 3).squeeze(0);
    Tensor attn = ops::dropout(ops::softmax(ops::matmul(q * scale, k.transpose(-2, -1)), -1), attn_drop_, true);
    out = ops::matmul(attn, v).transpose(1, 2).reshape({B, N, C});
  } else {
    out = ops::qkv_attention(qkv_out, heads_, scale);
  }
  return ops::dropout(proj->forward(out), proj_drop_, training());
}

void init_linear_pytorch_default(nn::Linear& layer, Generator& gen) {
  const int64_t fan_in = layer.weight.size(1);
  nn::init::default_uniform(layer.weight, fan_in, gen);
  if (layer.bias.defined()) nn::init::default_uniform(layer.bias, fan_in, gen);
}

int64_t square_side(int64_t n) {
  if (n < 0) return -1;
  int64_t r = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  while (r * r > n) --r;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r * r == n ? r : -1;
}

namespace {
bool is_square(int64_t n) { return square_side(n) >= 0; }
}  // namespace

int64_t square_grid(int64_t num_tokens) {
  const int64_t L = num_tokens - 1;
  return L >= 1 ? std::max<int64_t>(square_side(L), 0) : 0;
}

void check_attention_shape(const AttentionConfig& cfg, int64_t N) {
  VT_CHECK(N >= 2, "[model] attention needs at least 2 tokens (CLS + patches), got N = ", N);
  const int64_t G = square_grid(N);
  if (cfg.is_mita()) {
    // The layout the forward will pool by (models/mita.h): checked here, when the model is built.
    if (cfg.landmark_pool != "random") landmark_layout(N, cfg.m, cfg.landmark_pool);
    const int64_t k = cfg.k > 0 ? cfg.k : (cfg.type == "mita" ? cfg.m : 2 * cfg.m);
    const char* which = cfg.k > 0 ? "" : cfg.type == "mita" ? ", the default m" : ", the default 2m";
    VT_CHECK(k <= N, "[model] model.attention.k (", k, which, ") must be <= the number of tokens N = ", N);
    VT_CHECK(G > 0 || !(cfg.dwc || cfg.gate), "[model] model.attention.", cfg.gate ? "gate" : "dwc",
             " needs a square patch grid, but N - 1 = ", N - 1, " patch tokens are not a perfect square");
  } else if (cfg.type == "agent" && cfg.landmark_pool == "sequence") {
    VT_CHECK(cfg.agent_num <= N, "[model] model.attention.agent_num (", cfg.agent_num,
             ") must be <= the number of tokens N = ", N, " (landmark_pool 'sequence' pools them 1-D)");
  } else if (cfg.type == "inline") {
    VT_CHECK(G > 0, "[model] model.attention.type 'inline' needs a square patch grid (its local residual is a 3x3 ",
             "conv over the patches), but N - 1 = ", N - 1, " tokens are not a perfect square");
  } else if (cfg.type == "agent" || cfg.type == "agent_bias") {
    VT_CHECK(G > 0, "[model] model.attention.type '", cfg.type, "' needs a square patch grid, but N - 1 = ", N - 1,
             " tokens are not a perfect square");
    VT_CHECK(is_square(cfg.agent_num), "[model] model.attention.agent_num (", cfg.agent_num,
             ") must be a perfect square (the agents are a 2-D pooling of the patch grid)");
  }
}

std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double drop,
                                          Generator& gen, int64_t num_tokens) {
  if (num_tokens > 0) check_attention_shape(cfg, num_tokens);
  const bool mita = cfg.is_mita();
  if (!mita && (cfg.dwc || cfg.gate))
    spdlog::warn("model.attention.dwc/gate apply to the mita types only: ignored for type '{}'", cfg.type);
  if (cfg.type == "dense") return std::make_shared<DenseAttention>(dim, heads, 0.0, drop, gen);
  if (mita) return make_mita_attention(cfg, dim, heads, drop, gen);
  if (cfg.type == "agent" || cfg.type == "agent_bias") {
    const bool bias = cfg.type == "agent_bias";
    VT_CHECK(!bias || num_tokens > 0, "[model] model.attention.type 'agent_bias' needs the token count: its ",
             "biases are sized by the patch grid");
    // agent (the "minus" baseline) pools like MiTA (landmark_pool); agent_bias always pools the patch tokens, to
    // which its position biases are aligned.
    AgentOptions o;
    o.heads = heads;
    o.agent_num = cfg.agent_num;
    o.patches_only = bias || cfg.landmark_pool == "patches";
    o.sequence = !bias && cfg.landmark_pool == "sequence";
    return std::make_shared<AgentAttention>(dim, o, bias ? square_grid(num_tokens) : 0, drop, gen);
  }
  if (cfg.type == "linear") return std::make_shared<LinearAttention>(dim, heads, drop, gen);
  if (cfg.type == "flatten") {
    VT_CHECK(num_tokens > 0, "[model] model.attention.type 'flatten' needs the token count: its positional ",
             "encoding is sized by it");
    return std::make_shared<FocusedLinearAttention>(dim, heads, num_tokens, drop, gen);
  }
  if (cfg.type == "inline") return std::make_shared<InLineAttention>(dim, heads, drop, gen);
  if (cfg.type == "mhla") return std::make_shared<MhlaAttention>(dim, heads, num_tokens, drop, gen);
  if (cfg.type == "pola") {
    VT_CHECK(num_tokens > 0, "[model] model.attention.type 'pola' needs the token count: its positional encoding is ",
             "sized by it");
    return std::make_shared<PolaAttention>(dim, heads, num_tokens, drop, gen);
  }
  VT_FAIL("[model] unknown model.attention.type '", cfg.type,
          "' (known: dense, mita, mita_route, mita_compress, agent, agent_bias, linear, flatten, inline, mhla, pola)");
}

}  // namespace vt::models
