// timm weights exchange. The resampling follows PyTorch's CPU upsample kernels step by step in f32 (weights per
// output index computed once per axis, width pass then height pass), so a resized pos_embed matches what timm
// itself loads to within f32 rounding.
#include "engine/timm_weights.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/weights_load.h"

namespace vt::engine {

namespace {

// Taps of one output index along one axis: input indices and weights.
struct Taps {
  std::vector<int64_t> index;
  std::vector<float> weight;
};

// PIL's cubic (a = -0.5), which PyTorch's antialiased bicubic uses.
float cubic_aa(float x) {
  constexpr float a = -0.5f;
  x = std::abs(x);
  if (x < 1.0f) return ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
  if (x < 2.0f) return (((x - 5.0f) * x + 8.0f) * x - 4.0f) * a;
  return 0.0f;
}

// PyTorch's _compute_weights_aa with align_corners=False: support 2 (stretched by the scale when shrinking),
// taps clipped to the input and renormalised.
std::vector<Taps> taps_antialias(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float support = scale >= 1.0f ? 2.0f * scale : 2.0f;
  const float invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float center = scale * (static_cast<float>(i) + 0.5f);
    const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5f), 0);
    const int64_t xsize = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5f), in) - xmin;
    Taps& t = taps[static_cast<size_t>(i)];
    float total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      const float w = cubic_aa((static_cast<float>(j + xmin) - center + 0.5f) * invscale);
      t.index.push_back(j + xmin);
      t.weight.push_back(w);
      total += w;
    }
    if (total != 0.0f)
      for (float& w : t.weight) w /= total;
  }
  return taps;
}

// PyTorch's upsample_bicubic2d with align_corners=False: Keys' cubic (a = -0.75), 4 taps, clamped indices.
std::vector<Taps> taps_plain(int64_t in, int64_t out) {
  constexpr float A = -0.75f;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float real = scale * (static_cast<float>(i) + 0.5f) - 0.5f;
    const int64_t base = static_cast<int64_t>(std::floor(real));
    const float t = real - static_cast<float>(base);
    const float x1 = t, x2 = 1.0f - t;
    const float w[4] = {((A * (x1 + 1) - 5 * A) * (x1 + 1) + 8 * A) * (x1 + 1) - 4 * A,
                        ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1, ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1,
                        ((A * (x2 + 1) - 5 * A) * (x2 + 1) + 8 * A) * (x2 + 1) - 4 * A};
    for (int k = 0; k < 4; ++k) {
      taps[static_cast<size_t>(i)].index.push_back(std::clamp<int64_t>(base - 1 + k, 0, in - 1));
      taps[static_cast<size_t>(i)].weight.push_back(w[k]);
    }
  }
  return taps;
}

// PyTorch's upsample_bilinear2d with align_corners=False: source index clamped at 0, two taps.
std::vector<Taps> taps_bilinear(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float real = std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.0f);
    const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(real), in - 1);
    const int64_t i1 = std::min<int64_t>(i0 + 1, in - 1);
    const float l1 = real - static_cast<float>(i0);
    taps[static_cast<size_t>(i)].index = {i0, i1};
    taps[static_cast<size_t>(i)].weight = {1.0f - l1, l1};
  }
  return taps;
}

std::vector<Taps> axis_taps(int64_t in, int64_t out, PosEmbedResize mode) {
  switch (mode) {
    case PosEmbedResize::timm: return taps_antialias(in, out);
    case PosEmbedResize::deit: return taps_plain(in, out);
    case PosEmbedResize::bilinear: return taps_bilinear(in, out);
  }
  return {};
}

const char* resize_name(PosEmbedResize mode) {
  switch (mode) {
    case PosEmbedResize::timm: return "timm antialiased bicubic";
    case PosEmbedResize::deit: return "DeiT plain bicubic";
    case PosEmbedResize::bilinear: return "bilinear";
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

const Tensor* find(const io::NamedTensors& w, const std::string& name) {
  for (const auto& [n, t] : w)
    if (n == name) return &t;
  return nullptr;
}

int64_t square_side(int64_t tokens, const std::string& what) {
  int64_t s = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(tokens))));
  VT_CHECK(s * s == tokens, "[timm] ", what, ": ", tokens, " patch tokens do not form a square grid");
  return s;
}

}  // namespace

Tensor resample_pos_embed(const Tensor& pos_embed, int64_t old_h, int64_t old_w, int64_t new_h, int64_t new_w,
                          int64_t num_prefix_tokens, PosEmbedResize mode) {
  VT_CHECK(pos_embed.dim() == 3 && pos_embed.size(0) == 1, "[timm] pos_embed must be [1, tokens, C], got ",
           to_string(pos_embed.shape()));
  VT_CHECK(old_h > 0 && old_w > 0 && new_h > 0 && new_w > 0 && num_prefix_tokens >= 0, "[timm] bad pos_embed grid ",
           old_h, "x", old_w, " -> ", new_h, "x", new_w);
  VT_CHECK(pos_embed.size(1) == num_prefix_tokens + old_h * old_w, "[timm] pos_embed has ", pos_embed.size(1),
           " tokens, expected ", num_prefix_tokens, " + ", old_h, "x", old_w);
  if (old_h == new_h && old_w == new_w) return pos_embed;
  const int64_t C = pos_embed.size(2), P = num_prefix_tokens;
  const Tensor src = pos_embed.detach().to(cpu()).to(DType::f32).contiguous();
  const float* in = src.data<float>();
  // Width pass: [old_h, new_w, C]; then height pass into the output's patch tokens.
  std::vector<float> mid(static_cast<size_t>(old_h * new_w * C), 0.0f);
  const std::vector<Taps> tw = axis_taps(old_w, new_w, mode), th = axis_taps(old_h, new_h, mode);
  const float* grid = in + P * C;
  for (int64_t y = 0; y < old_h; ++y)
    for (int64_t x = 0; x < new_w; ++x) {
      float* o = &mid[static_cast<size_t>((y * new_w + x) * C)];
      const Taps& t = tw[static_cast<size_t>(x)];
      for (size_t k = 0; k < t.index.size(); ++k) {
        const float* s = grid + (y * old_w + t.index[k]) * C;
        for (int64_t c = 0; c < C; ++c) o[c] += t.weight[k] * s[c];
      }
    }
  Tensor out = Tensor::zeros({1, P + new_h * new_w, C}, DType::f32);
  float* dst = out.data<float>();
  std::copy(in, in + P * C, dst);  // CLS (and any other prefix token) kept as is
  for (int64_t y = 0; y < new_h; ++y) {
    const Taps& t = th[static_cast<size_t>(y)];
    for (int64_t x = 0; x < new_w; ++x) {
      float* o = dst + (P + y * new_w + x) * C;
      for (size_t k = 0; k < t.index.size(); ++k) {
        const float* s = &mid[static_cast<size_t>((t.index[k] * new_w + x) * C)];
        for (int64_t c = 0; c < C; ++c) o[c] += t.weight[k] * s[c];
      }
    }
  }
  return pos_embed.dtype() == DType::f32 ? out : out.to(pos_embed.dtype());
}

std::vector<std::string> adapt_timm_weights(io::NamedTensors& weights, const models::ViTConfig& target,
                                            const TimmAdaptOptions& options) {
  std::vector<std::string> notes;
  std::vector<std::string> cast;
  for (auto& [name, t] : weights)
    if (is_floating(t.dtype()) && t.dtype() != DType::f32) {
      cast.push_back(name + " (" + dtype_name(t.dtype()) + ")");
      t = t.detach().to(cpu()).to(DType::f32);
    }
  if (!cast.empty()) notes.push_back(std::to_string(cast.size()) + " tensor(s) cast to f32, e.g. " + cast.front());

  const int64_t prefix = target.num_prefix_tokens();
  for (auto& [name, t] : weights) {
    if (name != "pos_embed") continue;
    VT_CHECK(t.dim() == 3 && t.size(0) == 1 && t.size(1) >= prefix, "[timm] pos_embed must be [1, ", prefix,
             " + N, C], got ", to_string(t.shape()));
    VT_CHECK(target.patch_size > 0 && target.img_size % target.patch_size == 0, "[timm] image size ", target.img_size,
             " is not a multiple of the patch size ", target.patch_size);
    const int64_t old_side = square_side(t.size(1) - prefix, "pos_embed");
    const int64_t new_side = target.token_grid();
    if (old_side == new_side) continue;
    t = resample_pos_embed(t, old_side, old_side, new_side, new_side, prefix, options.resize);
    notes.push_back("pos_embed: grid " + std::to_string(old_side) + "x" + std::to_string(old_side) + " -> " +
                    std::to_string(new_side) + "x" + std::to_string(new_side) + " (" + resize_name(options.resize) +
                    (prefix > 1 ? ", CLS and dist_token kept)" : ", CLS kept)"));
  }
  if (!options.adapt_head) return notes;

  const Tensor* head = find(weights, "head.weight");
  const int64_t old_classes = head && head->dim() == 2 ? head->size(0) : 0;
  if (head && old_classes != target.num_classes) {
    VT_CHECK(head->dim() == 2, "[timm] head.weight must be [classes, C], got ", to_string(head->shape()));
    const int64_t C = head->size(1);
    std::erase_if(weights,
                  [](const auto& nt) { return starts_with(nt.first, "head.") || starts_with(nt.first, "head_dist."); });
    if (target.num_classes > 0 && options.zero_new_head) {
      for (const std::string h : {"head", "head_dist"}) {
        if (h == "head_dist" && !target.distilled) continue;
        weights.emplace_back(h + ".weight", Tensor::zeros({target.num_classes, C}, DType::f32));
        weights.emplace_back(h + ".bias", Tensor::zeros({target.num_classes}, DType::f32));
      }
      notes.push_back("head: " + std::to_string(old_classes) + " classes -> " + std::to_string(target.num_classes) +
                      ", replaced by a zero head");
    } else {
      notes.push_back("head: " + std::to_string(old_classes) + " classes -> " + std::to_string(target.num_classes) +
                      ", dropped");
    }
  }
  return notes;
}

models::ViTConfig infer_vit_config(const io::NamedTensors& weights) {
  auto need = [&](const std::string& name, int64_t dim) -> const Tensor& {
    const Tensor* t = find(weights, name);
    VT_CHECK(t, "[timm] the weights have no '", name, "': not a timm VisionTransformer state dict");
    VT_CHECK(t->dim() == dim, "[timm] '", name, "' has shape ", to_string(t->shape()), ", expected ", dim, " dims");
    return *t;
  };
  models::ViTConfig cfg;
  const Tensor& proj = need("patch_embed.proj.weight", 4);
  const Tensor& pos = need("pos_embed", 3);
  cfg.embed_dim = proj.size(0);
  cfg.in_chans = proj.size(1);
  cfg.patch_size = proj.size(2);
  cfg.distilled = find(weights, "dist_token") != nullptr;
  cfg.img_size = square_side(pos.size(1) - cfg.num_prefix_tokens(), "pos_embed") * cfg.patch_size;
  cfg.depth = 0;
  while (find(weights, "blocks." + std::to_string(cfg.depth) + ".norm1.weight")) ++cfg.depth;
  VT_CHECK(cfg.depth > 0, "[timm] the weights have no 'blocks.0.norm1.weight'");
  const Tensor& fc1 = need("blocks.0.mlp.fc1.weight", 2);
  cfg.mlp_ratio = static_cast<double>(fc1.size(0)) / static_cast<double>(cfg.embed_dim);
  cfg.num_heads = cfg.embed_dim % 64 == 0 ? cfg.embed_dim / 64 : 1;
  const Tensor* head = find(weights, "head.weight");
  cfg.num_classes = head && head->dim() == 2 ? head->size(0) : 0;
  return cfg;
}

std::vector<std::pair<std::string, Shape>> timm_state_dict_spec(const models::ViTConfig& cfg) {
  const int64_t C = cfg.embed_dim, H = static_cast<int64_t>(static_cast<double>(C) * cfg.mlp_ratio);
  const int64_t grid = cfg.img_size / cfg.patch_size;
  std::vector<std::pair<std::string, Shape>> spec = {
      {"cls_token", {1, 1, C}},
      {"pos_embed", {1, cfg.num_prefix_tokens() + grid * grid, C}},
      {"patch_embed.proj.weight", {C, cfg.in_chans, cfg.patch_size, cfg.patch_size}},
      {"patch_embed.proj.bias", {C}}};
  for (int64_t i = 0; i < cfg.depth; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    for (auto& [n, s] : std::vector<std::pair<std::string, Shape>>{{"norm1.weight", {C}},
                                                                   {"norm1.bias", {C}},
                                                                   {"attn.qkv.weight", {3 * C, C}},
                                                                   {"attn.qkv.bias", {3 * C}},
                                                                   {"attn.proj.weight", {C, C}},
                                                                   {"attn.proj.bias", {C}},
                                                                   {"norm2.weight", {C}},
                                                                   {"norm2.bias", {C}},
                                                                   {"mlp.fc1.weight", {H, C}},
                                                                   {"mlp.fc1.bias", {H}},
                                                                   {"mlp.fc2.weight", {C, H}},
                                                                   {"mlp.fc2.bias", {C}}})
      spec.emplace_back(b + n, s);
  }
  spec.push_back({"norm.weight", {C}});
  spec.push_back({"norm.bias", {C}});
  if (cfg.num_classes > 0) {
    spec.push_back({"head.weight", {cfg.num_classes, C}});
    spec.push_back({"head.bias", {cfg.num_classes}});
  }
  if (cfg.distilled) {  // VisionTransformerDistilled registers these after the base model's
    spec.push_back({"dist_token", {1, 1, C}});
    if (cfg.num_classes > 0) {
      spec.push_back({"head_dist.weight", {cfg.num_classes, C}});
      spec.push_back({"head_dist.bias", {cfg.num_classes}});
    }
  }
  return spec;
}

void check_timm_compatible(const io::NamedTensors& weights, const models::ViTConfig& cfg) {
  std::map<std::string, Shape> expected;
  for (const auto& [n, s] : timm_state_dict_spec(cfg)) expected[n] = s;
  std::set<std::string> seen;
  for (const auto& [name, t] : weights) {
    auto it = expected.find(name);
    VT_CHECK(it != expected.end(), "[timm] '", name, "' is not in timm's VisionTransformer state dict ",
             "(only dense attention exports to timm)");
    VT_CHECK(t.shape() == it->second, "[timm] '", name, "' has shape ", to_string(t.shape()), ", timm expects ",
             to_string(it->second));
    VT_CHECK(t.dtype() == DType::f32, "[timm] '", name, "' is ", dtype_name(t.dtype()), ", timm's weights are F32");
    VT_CHECK(seen.insert(name).second, "[timm] '", name, "' appears twice");
  }
  for (const auto& [name, s] : expected)
    VT_CHECK(seen.count(name), "[timm] the weights lack '", name, "' ", to_string(s), ", which timm needs");
}

TimmLoadReport load_timm_weights(models::VisionTransformer& model, io::NamedTensors weights,
                                 const TimmAdaptOptions& options) {
  TimmLoadReport report;
  report.adapted = adapt_timm_weights(weights, model.config(), options);
  if (!find(weights, "head.weight") && model.config().num_classes > 0) {
    // The classifier was dropped (or never there): the model keeps its own freshly initialised head.
    for (const auto& [name, t] : model.state_dict())
      if (starts_with(name, "head.") || starts_with(name, "head_dist."))
        weights.emplace_back(name, t.detach().to(cpu()));
    report.adapted.push_back("head: the model's own initial head (" + std::to_string(model.config().num_classes) +
                             " classes) is kept");
  }
  // Tensors of other attention kinds that timm's ViT never has (MiTA's DWC, agent tokens, ...) keep the model's
  // initial values, so dense weights start a fine-tune of any kind. A gate's qkvg is not filled: it must come
  // from the weights (load_weights_compatible says why it cannot).
  std::set<std::string> timm_names;
  for (const auto& [name, shape] : timm_state_dict_spec(model.config())) timm_names.insert(name);
  std::vector<std::string> kept;
  for (const auto& [name, t] : model.state_dict())
    if (!timm_names.count(name) && name.find("qkvg") == std::string::npos && !find(weights, name)) {
      weights.emplace_back(name, t.detach().to(cpu()));
      kept.push_back(name);
    }
  if (!kept.empty())
    report.adapted.push_back(std::to_string(kept.size()) + " tensor(s) timm's ViT lacks keep the model's initial " +
                             "values, e.g. " + kept.front());
  report.load = load_weights_compatible(model, weights);
  for (const auto& line : report.adapted) spdlog::info("timm weights: {}", line);
  for (const auto& line : report.load.adapted) spdlog::info("timm weights: {}", line);
  if (!report.load.ignored.empty())
    spdlog::warn("timm weights: {} tensor(s) unused by this model, e.g. {}", report.load.ignored.size(),
                 report.load.ignored.front());
  return report;
}

WeightLoadReport load_segmenter_backbone(models::Segmenter& seg, const std::string& path) {
  io::NamedTensors weights;
  try {
    weights = read_model_weights(path);
  } catch (const Error& e) {
    VT_FAIL("[timm] cannot read the backbone weights '", path, "': ", e.what());
  }
  for (const auto& [name, t] : weights)
    VT_CHECK(!starts_with(name, "encoder.") && !starts_with(name, "decoder."), "[timm] '", path, "' holds '", name,
             "': a whole Segmenter checkpoint, not a timm-format backbone");
  TimmAdaptOptions options;
  options.resize = PosEmbedResize::bilinear;
  try {
    TimmLoadReport r = load_timm_weights(*seg.encoder, std::move(weights), options);
    WeightLoadReport out = r.load;
    out.adapted.insert(out.adapted.begin(), r.adapted.begin(), r.adapted.end());
    return out;
  } catch (const Error& e) {
    VT_FAIL("[timm] loading the backbone '", path, "' into the segmenter's encoder: ", e.what());
  }
}

io::NamedTensors export_timm_weights(const models::VisionTransformer& model) {
  io::NamedTensors state;
  for (const auto& [name, t] : model.state_dict()) state.emplace_back(name, t.detach().to(cpu()).to(DType::f32));
  io::NamedTensors out;
  for (const auto& [name, shape] : timm_state_dict_spec(model.config()))
    if (const Tensor* t = find(state, name)) out.emplace_back(name, *t);
  for (const auto& [name, t] : state)
    VT_CHECK(find(out, name), "[timm] '", name, "' (", model.config().attention.type,
             " attention) has no place in timm's VisionTransformer: only dense models export to timm");
  check_timm_compatible(out, model.config());
  return out;
}

}  // namespace vt::engine
