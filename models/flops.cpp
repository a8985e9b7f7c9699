// Parameter and MAC counting for a VisionTransformer; the conventions are in flops.h.
#include "models/flops.h"

#include <cstdio>

#include "models/cbt_decoder.h"
#include "models/linear_decoder.h"
#include "models/mita_attention.h"

namespace vt::models {

namespace {

constexpr int64_t kLayerNormMacsPerElement = 5;  // fvcore's norm_flop_counter with an affine transform
constexpr int64_t kBilinearMacsPerOutput = 4;    // fvcore's handle for aten::upsample_bilinear2d

// Where a parameter of one block goes: "attn.qkvg" is split into its q, k, v part (qkv) and its g part (gate).
std::string block_row_of(const std::string& name) {
  auto starts = [&](const char* p) { return name.rfind(p, 0) == 0; };
  if (starts("norm1.")) return "norm1";
  if (starts("norm2.")) return "norm2";
  if (starts("mlp.fc1.")) return "mlp.fc1";
  if (starts("mlp.fc2.")) return "mlp.fc2";
  if (starts("attn.qkv.")) return "attn.qkv";
  if (starts("attn.proj.")) return "attn.proj";
  if (starts("attn.dwc.") || starts("attn.lepe.")) return "attn.dwc";  // MiTA's DWC, BRA's LCE: depth-wise convs
  if (starts("attn.")) return "attn.core";  // agent biases, q/k norms, scales, encodings, InLine's kernel predictor
  if (name == "gamma_1" || name == "gamma_2") return "layer_scale";
  VT_CHECK(false, "[flops] parameter '", name, "' of a block belongs to no known module");
  return {};
}

FlopsRow& find_row(std::vector<FlopsRow>& rows, const std::string& name) {
  for (auto& r : rows)
    if (r.name == name) return r;
  VT_CHECK(false, "[flops] no row '", name, "'");
  return rows.front();
}

void add_macs(FlopsRow& r, int64_t macs) {
  r.macs += macs;
  r.macs_fvcore += macs;
}

std::string describe_attention(const AttentionConfig& a, int64_t heads, int64_t registers) {
  if (a.is_mita()) {
    const MitaOptions o = mita_options(a, heads, registers);
    std::string s = a.type + " m=" + std::to_string(o.m) + " k=" + std::to_string(o.k);
    if (o.s != 1) s += " s=" + std::to_string(o.s);
    if (a.dwc) s += " +dwc";
    if (a.gate) s += " +gate";
    return s;
  }
  if (a.type == "agent" || a.type == "agent_bias") return a.type + " n=" + std::to_string(a.agent_num);
  if (a.type == "bra")
    return a.type + " n_win=" + std::to_string(a.n_win) + " topk=" + std::to_string(a.topk) +
           (a.bra_scale == "head_dim" ? " scale=head_dim" : "");
  return a.type;
}

}  // namespace

const FlopsRow& FlopsReport::row(const std::string& name) const {
  for (const auto* list : {&rows, &block_rows})
    for (const auto& r : *list)
      if (r.name == name) return r;
  VT_CHECK(false, "[flops] no row '", name, "'");
  return total;
}

std::pair<int64_t, int64_t> attention_core_macs(const AttentionConfig& cfg, int64_t tokens, int64_t dim, int64_t heads,
                                                int64_t registers) {
  const int64_t N = tokens, C = dim;
  VT_CHECK(heads > 0 && C % heads == 0, "[flops] embed_dim ", C, " is not divisible by num_heads ", heads);
  if (cfg.type == "dense") return {2 * N * N * C, 2 * N * N * C};  // q kᵀ and p v; timm 0.4.12: explicit matmuls
  if (cfg.is_mita()) {
    const MitaOptions o = mita_options(cfg, heads, registers);
    const int64_t pooled = o.landmark_pool == "sequence" ? N : N - 1 - registers;
    if (o.compress_only)  // pooling; V̂ = SDPA(R, K, V) and the shared attention, both fused
      return {pooled * C + 2 * o.m * N * C + 2 * N * o.m * C, pooled * C};
    const int64_t routing = 2 * o.m * N * C + pooled * C;           // R Kᵀ, R Qᵀ (explicit matmuls), pooling
    int64_t fused = 2 * N * o.s * o.k * C;                          // routed attention (FlashAttention varlen)
    if (!o.route_only) fused += 2 * o.m * N * C + 2 * N * o.m * C;  // V̂ = SDPA(R, K, V); shared attention
    return {routing + fused, routing};
  }
  if (cfg.type == "agent" || cfg.type == "agent_bias") {
    const int64_t n = cfg.agent_num;
    const int64_t pooling = (N - 1) * C;
    const int64_t attend = 2 * n * N * C + 2 * N * n * C;  // V_A = attn(A, K, V); O = attn(Q, A, V_A)
    // agent: both through F.scaled_dot_product_attention (skipped by fvcore); agent_bias: explicit softmaxes.
    return {pooling + attend, pooling + (cfg.type == "agent_bias" ? attend : 0)};
  }
  const int64_t d = C / heads;
  if (cfg.type == "linear" || cfg.type == "flatten") {
    // φ(K)ᵀV and φ(Q)(KV) per head; φ(Q)·Σφ(K) for the normaliser (flatten: einsums, which fvcore counts; its
    // focusing powers and norms are element-wise)
    const int64_t macs = 2 * N * C * d + N * C;
    return {macs, macs};
  }
  if (cfg.type == "inline") {
    // KᵀV, Q(KᵀV), Q·k̄ (explicit matmuls); the kernel predictor's two grouped 1x1 Conv1d on the token mean (C²/H
    // and 9C²/H) and the predicted depth-wise 3x3 conv over the N - 1 patches (convs: fvcore counts them)
    const int64_t macs = 2 * N * C * d + N * C + (C * d + 9 * C * d) + 9 * (N - 1) * C;
    return {macs, macs};
  }
  if (cfg.type == "mhla") {
    // its own LayerNorm; per head φ(K_p)ᵀV_p and φ(Q_p)·(mixed state), N·d² each; the block mixing, a 1x1 conv
    // over the P = N/16 blocks' d×d states, P²·d² (N = G² tokens, no CLS)
    const int64_t P = N / 16;
    return {kLayerNormMacsPerElement * N * C + 2 * N * C * d + P * P * C * d,
            kLayerNormMacsPerElement * N * C + 2 * N * C * d + P * P * C * d};
  }
  if (cfg.type == "pola") {
    // per half (same-sign, opposite) and head: Kᵀ V_half and Q (Kᵀ V_half), N·2d·d/2 each, and Q·k̄, N·2d (the
    // official code forms Kᵀ V₁ and Kᵀ V₂ as two matmuls, counted as such); the powers are element-wise
    const int64_t macs = 2 * (2 * N * C * d + 2 * N * C);
    return {macs, macs};
  }
  if (cfg.type == "bra") {
    // On the P = N - 1 patches in R = n_win² regions of w² = P / R: the region affinity q_r k_rᵀ, R²·C; each patch
    // query against L = 1 + topk·w² keys (CLS + its routed regions' patches) and the values, 2·P·L·C; the CLS
    // query against all N keys and values, 2·N·C (all explicit matmuls, which fvcore counts); the region means of
    // q and k, 2·P·C (torch.mean: fvcore has no handle for it). The LCE conv is the attn.dwc row.
    const int64_t P = N - 1, R = cfg.n_win * cfg.n_win, L = 1 + cfg.topk * (P / R);
    const int64_t matmuls = R * R * C + 2 * P * L * C + 2 * N * C;
    return {matmuls + 2 * P * C, matmuls};
  }
  VT_CHECK(false, "[flops] unknown model.attention.type '", cfg.type, "'");
  return {};
}

FlopsReport count_flops(const VisionTransformer& model) {
  const ViTConfig& cfg = model.config();
  FlopsReport rep;
  rep.attention = describe_attention(cfg.attention, cfg.num_heads, cfg.vit5 ? cfg.num_registers : 0);
  rep.image_size = cfg.img_size;
  rep.patch_size = cfg.patch_size;
  rep.depth = static_cast<int64_t>(model.blocks.size());
  // Every token: prefix (CLS, dist_token; none with MHLA), patches, ViT-5's registers.
  const int64_t patches = model.patch_embed->num_patches(), N = cfg.num_tokens(), C = cfg.embed_dim;
  const int64_t registers = cfg.vit5 ? cfg.num_registers : 0;
  rep.tokens = N;

  // ---- parameters, from the tensors ----
  rep.rows = {{"patch_embed"}, {"cls_token, pos_embed"}, {"blocks"}, {"norm"}, {"head"}};
  for (const char* name : {"norm1", "attn.qkv", "attn.core", "attn.proj", "attn.dwc", "attn.gate", "norm2", "mlp.fc1",
                           "mlp.fc2", "layer_scale"})
    rep.block_rows.push_back({name});
  const auto& block0 = *model.blocks.front();
  for (const auto& [name, t] : block0.named_parameters()) {
    if (name.rfind("attn.qkvg.", 0) == 0) {  // [4C, C] / [4C]: rows 0..3C-1 are q, k, v, the rest g
      find_row(rep.block_rows, "attn.qkv").params += t.numel() / 4 * 3;
      find_row(rep.block_rows, "attn.gate").params += t.numel() / 4;
    } else {
      find_row(rep.block_rows, block_row_of(name)).params += t.numel();
    }
  }
  for (const auto& [name, t] : model.named_parameters()) {
    if (name.rfind("patch_embed.", 0) == 0) find_row(rep.rows, "patch_embed").params += t.numel();
    else if (name == "cls_token" || name == "pos_embed" || name == "reg_token")
      find_row(rep.rows, "cls_token, pos_embed").params += t.numel();
    else if (name.rfind("blocks.", 0) == 0) find_row(rep.rows, "blocks").params += t.numel();
    else if (name.rfind("norm.", 0) == 0) find_row(rep.rows, "norm").params += t.numel();
    else if (name.rfind("head.", 0) == 0) find_row(rep.rows, "head").params += t.numel();
    else VT_CHECK(false, "[flops] parameter '", name, "' belongs to no known module");
  }

  // ---- MACs: linears and convs from the weight shapes, the attention core from the settings ----
  add_macs(find_row(rep.rows, "patch_embed"), patches * model.patch_embed->proj->weight.numel());
  // RMSNorm (ViT-5) is element-wise ops in the official code: fvcore counts none of it, nor do we.
  const int64_t norm_macs = cfg.vit5 ? 0 : kLayerNormMacsPerElement * N * C;
  add_macs(find_row(rep.rows, "norm"), norm_macs);
  if (model.head) add_macs(find_row(rep.rows, "head"), model.head->weight.numel());  // the CLS token only

  add_macs(find_row(rep.block_rows, "norm1"), norm_macs);
  add_macs(find_row(rep.block_rows, "norm2"), norm_macs);
  add_macs(find_row(rep.block_rows, "mlp.fc1"), N * block0.mlp->fc1->weight.numel());
  add_macs(find_row(rep.block_rows, "mlp.fc2"), N * block0.mlp->fc2->weight.numel());
  // Every attention kind names its projections qkv (or qkvg) and proj; the linear kind has no proj with 1 head.
  for (const auto& [name, t] : block0.named_parameters()) {
    if (name == "attn.qkv.weight" || name == "attn.proj.weight")
      add_macs(find_row(rep.block_rows, block_row_of(name)), N * t.numel());
    if (name == "attn.qkvg.weight") {
      add_macs(find_row(rep.block_rows, "attn.qkv"), N * t.numel() / 4 * 3);
      add_macs(find_row(rep.block_rows, "attn.gate"), N * t.numel() / 4);
    }
    if (name == "attn.dwc.weight" || name == "attn.lepe.weight")
      add_macs(find_row(rep.block_rows, "attn.dwc"), patches * t.numel());
  }
  const auto [core_all, core_fvcore] = attention_core_macs(cfg.attention, N, C, cfg.num_heads, registers);
  FlopsRow& core = find_row(rep.block_rows, "attn.core");
  core.macs += core_all;
  core.macs_fvcore += core_fvcore;

  FlopsRow& blocks = find_row(rep.rows, "blocks");
  for (const auto& r : rep.block_rows) {
    blocks.macs += rep.depth * r.macs;
    blocks.macs_fvcore += rep.depth * r.macs_fvcore;
  }
  rep.total.name = "model";
  for (const auto& r : rep.rows) {
    rep.total.params += r.params;
    rep.total.macs += r.macs;
    rep.total.macs_fvcore += r.macs_fvcore;
  }
  int64_t block_params = 0;
  for (const auto& r : rep.block_rows) block_params += r.params;
  VT_CHECK(rep.total.params == model.num_parameters() && blocks.params == rep.depth * block_params,
           "[flops] the per-module parameters do not add up (blocks of different shapes?)");
  return rep;
}

FlopsReport count_flops(const Segmenter& model) {
  FlopsReport rep = count_flops(*model.encoder);  // its head row stays empty: the encoder has no classifier
  const ViTConfig& b = model.config().backbone;
  const int64_t G = b.img_size / b.patch_size, Np = G * G, K = model.config().num_classes, D = b.embed_dim;
  rep.decoder = model.config().decoder.type;
  FlopsRow layers{"decoder.layers"}, masks{"decoder.masks"}, upsample{"upsample"};
  if (const auto* cbt = dynamic_cast<const CbtDecoder*>(model.decoder.get())) {
    const CbtDecoderConfig& c = cbt->config();
    const int64_t n = Np + K, inner = c.heads * c.head_dim, m = c.reps_grid * c.reps_grid;
    for (const auto& layer : cbt->layers) {
      add_macs(layers, kLayerNormMacsPerElement * n * D);
      add_macs(layers, n * layer->fn->proj->weight.numel() + n * layer->fn->to_out->weight.numel());
      add_macs(layers, Np * inner);  // adaptive pooling of the patch tokens of W to the representatives
      // A = Rep·Wᵀ, A·W, Rep·Repᵀ and its product with Rep, Aᵀ·Z: explicit matmuls, fvcore counts them too.
      add_macs(layers, 2 * m * n * inner + 2 * m * m * inner + n * m * inner);
      layers.params += layer->num_parameters();
    }
    masks.params = cbt->num_parameters() - layers.params;  // cls_emb, decoder_norm, mask_norm
    add_macs(masks, kLayerNormMacsPerElement * n * D + Np * K * D + kLayerNormMacsPerElement * Np * K);
  } else if (dynamic_cast<const LinearDecoder*>(model.decoder.get())) {
    masks.name = "decoder.head";
    masks.params = model.decoder->num_parameters();
    add_macs(masks, Np * K * D);
  } else {
    VT_CHECK(false, "[flops] unknown decoder type '", rep.decoder, "'");
  }
  add_macs(upsample, kBilinearMacsPerOutput * K * b.img_size * b.img_size);
  for (FlopsRow* r : {&layers, &masks, &upsample}) {
    if (r->params == 0 && r->macs == 0) continue;
    rep.rows.push_back(*r);
    rep.total.params += r->params;
    rep.total.macs += r->macs;
    rep.total.macs_fvcore += r->macs_fvcore;
  }
  VT_CHECK(rep.total.params == model.num_parameters(), "[flops] the segmenter's parameters do not add up");
  return rep;
}

std::string si_count(int64_t n) {
  const double v = static_cast<double>(n);
  char buf[32];
  if (v >= 1e9) std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
  else if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.2fK", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

}  // namespace vt::models
