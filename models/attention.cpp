#include "models/attention.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "models/agent_attention.h"
#include "models/bra_attention.h"
#include "models/focused_linear_attention.h"
#include "models/inline_attention.h"
#include "models/linear_attention.h"
#include "models/mhla_attention.h"
#include "models/mita_attention.h"
#include "models/pola_attention.h"
#include "models/rope.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace vt::models {

void Attention::init_vit5(const Vit5Attention& v, int64_t dim, int64_t heads) {
  if (!v.enabled) return;
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  const int64_t d = dim / heads;
  vit5_heads_ = heads;
  q_norm = register_module("q_norm", std::make_shared<nn::RMSNorm>(d, 1e-6));
  k_norm = register_module("k_norm", std::make_shared<nn::RMSNorm>(d, 1e-6));
  auto [cos, sin] = rotary_tables(v.grid, v.registers, d, v.register_theta);
  rope_cos_ = register_buffer("rope_cos", cos);
  rope_sin_ = register_buffer("rope_sin", sin);
}

Tensor Attention::vit5_qk(const Tensor& packed) const {
  if (!q_norm) return packed;
  const int64_t B = packed.size(0), N = packed.size(1), C = rope_cos_.size(2) * 2 * vit5_heads_;
  VT_CHECK(packed.dim() == 3 && packed.size(2) % C == 0 && packed.size(2) >= 3 * C && N == rope_cos_.size(0),
           "[vit5] expected the packed projection [B, ", rope_cos_.size(0), ", 3x", C, "], got ", packed.describe(),
           " (the token count is fixed by the image size the model was built for)");
  auto heads = [&](const Tensor& t) { return t.reshape({B, N, vit5_heads_, C / vit5_heads_}); };
  auto rotate = [&](const nn::RMSNorm& norm, int64_t at) {
    return apply_rotary(norm.forward(heads(packed.slice(2, at, at + C))), rope_cos_, rope_sin_).reshape({B, N, C});
  };
  return ops::concat({rotate(*q_norm, 0), rotate(*k_norm, C), packed.slice(2, 2 * C, packed.size(2))}, 2);
}

DenseAttention::DenseAttention(int64_t dim, int64_t heads, double attn_drop, double proj_drop, Generator& gen,
                               const Vit5Attention& vit5)
    : heads_(heads), attn_drop_(attn_drop), proj_drop_(proj_drop) {
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, !vit5.enabled, gen));
  init_vit5(vit5, dim, heads);
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
}

Tensor DenseAttention::forward(const Tensor& x) const {
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2), d = C / heads_;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Tensor qkv_out = vit5_qk(qkv->forward(x));  // [B, N, 3C]: [q; k; v], head h takes columns h·d..(h+1)·d of each
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

int64_t square_grid(int64_t num_tokens, int64_t registers) {
  const int64_t L = num_tokens - 1 - registers;
  return L >= 1 ? std::max<int64_t>(square_side(L), 0) : 0;
}

void check_attention_shape(const AttentionConfig& cfg, int64_t N, int64_t registers) {
  VT_CHECK(N >= 2 + registers, "[model] attention needs at least 2 tokens (CLS + patches), got N = ", N);
  const int64_t G = square_grid(N, registers);
  if (cfg.is_mita()) {
    // The layout the forward will pool by (models/mita.h): checked here, when the model is built.
    if (cfg.landmark_pool != "random") landmark_layout(N, cfg.m, cfg.landmark_pool, registers);
    const int64_t k = cfg.k > 0 ? cfg.k : (cfg.type == "mita" ? cfg.m : 2 * cfg.m);
    const char* which = cfg.k > 0 ? "" : cfg.type == "mita" ? ", the default m" : ", the default 2m";
    VT_CHECK(k <= N, "[model] model.attention.k (", k, which, ") must be <= the number of tokens N = ", N);
    VT_CHECK(G > 0 || !(cfg.dwc || cfg.gate), "[model] model.attention.", cfg.gate ? "gate" : "dwc",
             " needs a square patch grid, but N - 1 = ", N - 1 - registers, " patch tokens are not a perfect square");
  } else if (cfg.type == "agent" && cfg.landmark_pool == "sequence") {
    VT_CHECK(cfg.agent_num <= N, "[model] model.attention.agent_num (", cfg.agent_num,
             ") must be <= the number of tokens N = ", N, " (landmark_pool 'sequence' pools them 1-D)");
  } else if (cfg.type == "inline") {
    VT_CHECK(G > 0, "[model] model.attention.type 'inline' needs a square patch grid (its local residual is a 3x3 ",
             "conv over the patches), but N - 1 = ", N - 1, " tokens are not a perfect square");
  } else if (cfg.type == "bra") {
    VT_CHECK(G > 0, "[model] model.attention.type 'bra' needs a square patch grid (its regions tile the patch map), ",
             "but N - 1 = ", N - 1 - registers, " tokens are not a perfect square");
    VT_CHECK(G % cfg.n_win == 0, "[model] model.attention.n_win (", cfg.n_win, ") must divide the ", G, "x", G,
             " patch grid into n_win x n_win regions");
    VT_CHECK(cfg.topk <= cfg.n_win * cfg.n_win, "[model] model.attention.topk (", cfg.topk, ") must be <= the ",
             cfg.n_win * cfg.n_win, " regions of model.attention.n_win ", cfg.n_win);
  } else if (cfg.type == "agent" || cfg.type == "agent_bias") {
    VT_CHECK(G > 0, "[model] model.attention.type '", cfg.type, "' needs a square patch grid, but N - 1 = ", N - 1,
             " tokens are not a perfect square");
    VT_CHECK(is_square(cfg.agent_num), "[model] model.attention.agent_num (", cfg.agent_num,
             ") must be a perfect square (the agents are a 2-D pooling of the patch grid)");
  }
}

std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double drop,
                                          Generator& gen, int64_t num_tokens, const Vit5Attention& vit5) {
  if (vit5.enabled) {
    VT_CHECK(cfg.type == "dense" || cfg.type == "mita", "[model] a ViT-5 model takes model.attention.type 'dense' ",
             "or 'mita' (as the official MiTA-ViT-5 code), got '", cfg.type, "'");
    VT_CHECK(cfg.type != "mita" || (cfg.landmark_pool == "patches" && !cfg.gate),
             "[model] a ViT-5 model pools MiTA's landmarks from the patch tokens alone (registers excluded): it "
             "needs model.attention.landmark_pool 'patches' (got '",
             cfg.landmark_pool, "') and no gate");
  }
  if (num_tokens > 0) check_attention_shape(cfg, num_tokens, vit5.enabled ? vit5.registers : 0);
  const bool mita = cfg.is_mita();
  if (!mita && (cfg.dwc || cfg.gate))
    spdlog::warn("model.attention.dwc/gate apply to the mita types only: ignored for type '{}'", cfg.type);
  if (cfg.type == "dense") return std::make_shared<DenseAttention>(dim, heads, 0.0, drop, gen, vit5);
  if (mita) return make_mita_attention(cfg, dim, heads, drop, gen, vit5);
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
  if (cfg.type == "bra") {
    VT_CHECK(num_tokens > 0, "[model] model.attention.type 'bra' needs the token count: its regions tile the patch ",
             "grid");
    BraOptions o;
    o.heads = heads, o.n_win = cfg.n_win, o.topk = cfg.topk, o.scale = bra_scale(cfg.bra_scale, dim, heads);
    return std::make_shared<BraAttention>(dim, o, drop, gen);
  }
  VT_FAIL("[model] unknown model.attention.type '", cfg.type,
          "' (known: dense, mita, mita_route, mita_compress, agent, agent_bias, linear, flatten, inline, mhla, pola, ",
          "bra)");
}

}  // namespace vt::models
