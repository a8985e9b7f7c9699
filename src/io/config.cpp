// YAML <-> Config. Each field is named once, in the fields() tables below; one visitor walks them to decode YAML
// (also used for --set overrides) and another to emit YAML, so adding a key is a one-line change here plus the
// struct member in config.h.
#include "io/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <type_traits>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "io/json.h"
#include "io/timm_args.h"

namespace vt::io {
namespace {

// ---- the field tables (one line per key) ----

template <class V>
void fields(AttentionConfig& c, V& v) {
  v("type", c.type);
  v("m", c.m);
  v("k", c.k);
  v("s", c.s);
  v("dwc", c.dwc);
  v("gate", c.gate);
  v("landmark_pool", c.landmark_pool);
  v("impl", c.impl);
  v("deterministic", c.deterministic);
  v("shared_scale", c.shared_scale);
  v("agent_num", c.agent_num);
  v("n_win", c.n_win);
  v("topk", c.topk);
  v("bra_scale", c.bra_scale);
}

template <class V>
void fields(DecoderConfig& c, V& v) {
  v("type", c.type);
  v("layers", c.layers);
  v("heads", c.heads);
  v("head_dim", c.head_dim);
  v("reps_grid", c.reps_grid);
}

template <class V>
void fields(ModelConfig& c, V& v) {
  v("name", c.name);
  v("img_size", c.img_size);
  v("patch_size", c.patch_size);
  v("in_chans", c.in_chans);
  v("num_classes", c.num_classes);
  v("embed_dim", c.embed_dim);
  v("depth", c.depth);
  v("num_heads", c.num_heads);
  v("mlp_ratio", c.mlp_ratio);
  v("drop_rate", c.drop_rate);
  v("drop_path_rate", c.drop_path_rate);
  v("layer_norm_eps", c.layer_norm_eps);
  v("attention", c.attention);
  v("decoder", c.decoder);
  v("pooling", c.pooling);
  v("initial_checkpoint", c.initial_checkpoint);
}

template <class V>
void fields(DataConfig& c, V& v) {
  v("dataset", c.dataset);
  v("data_dir", c.data_dir);
  v("hflip", c.hflip);
  v("workers", c.workers);
  v("max_bad_files", c.max_bad_files);
  v("max_image_pixels", c.max_image_pixels);
  v("train_limit", c.train_limit);
  v("test_limit", c.test_limit);
  v("mixup", c.mixup);
  v("cutmix", c.cutmix);
  v("mixup_prob", c.mixup_prob);
  v("mixup_switch_prob", c.mixup_switch_prob);
  v("mixup_mode", c.mixup_mode);
  v("aa", c.aa);
  v("reprob", c.reprob);
  v("remode", c.remode);
  v("recount", c.recount);
  v("aug_repeats", c.aug_repeats);
  v("train_interpolation", c.train_interpolation);
  v("crop_pct", c.crop_pct);
  v("mean", c.mean);
  v("std", c.std);
  v("lra_task", c.lra_task);
  v("max_length", c.max_length);
  v("updates_per_epoch", c.updates_per_epoch);
}

template <class V>
void fields(OptimConfig& c, V& v) {
  v("opt", c.opt);
  v("lr", c.lr);
  v("weight_decay", c.weight_decay);
  v("momentum", c.momentum);
  v("opt_eps", c.opt_eps);
  v("opt_betas", c.opt_betas);
  v("clip_grad", c.clip_grad);
  v("smoothing", c.smoothing);
  v("lr_base", c.lr_base);
  v("lr_base_size", c.lr_base_size);
  v("lr_base_scale", c.lr_base_scale);
}

template <class V>
void fields(ScheduleConfig& c, V& v) {
  v("sched", c.sched);
  v("poly_power", c.poly_power);
  v("warmup_epochs", c.warmup_epochs);
  v("warmup_lr", c.warmup_lr);
  v("min_lr", c.min_lr);
  v("sched_on_updates", c.sched_on_updates);
  v("warmup_prefix", c.warmup_prefix);
  v("deit_epoch_lag", c.deit_epoch_lag);
}

template <class V>
void fields(TrainConfig& c, V& v) {
  v("epochs", c.epochs);
  v("batch_size", c.batch_size);
  v("global_batch_size", c.global_batch_size);
  v("seed", c.seed);
  v("device", c.device);
  v("amp", c.amp);
  v("amp_dtype", c.amp_dtype);
  v("threads", c.threads);
  v("output", c.output);
  v("log_interval", c.log_interval);
  v("grad_accum_steps", c.grad_accum_steps);
  v("max_steps", c.max_steps);
  v("resume", c.resume);
  v("checkpoint_interval", c.checkpoint_interval);
  v("checkpoint_hist", c.checkpoint_hist);
  v("recovery_interval", c.recovery_interval);
  v("recovery_minutes", c.recovery_minutes);
  v("model_ema", c.model_ema);
  v("model_ema_decay", c.model_ema_decay);
  v("cuda_graph", c.cuda_graph);
}

template <class V>
void fields(EvalConfig& c, V& v) {
  v("batch_size", c.batch_size);
  v("interval", c.interval);
  v("best_metric", c.best_metric);
  v("seg_short_side", c.seg_short_side);
  v("seg_long_side", c.seg_long_side);
  v("seg_stride", c.seg_stride);
  v("seg_scales", c.seg_scales);
  v("seg_flip", c.seg_flip);
}

template <class V>
void fields(DistConfig& c, V& v) {
  v("bucket_mb", c.bucket_mb);
  v("zero1", c.zero1);
}

template <class V>
void fields(Config& c, V& v) {
  v("model", c.model);
  v("data", c.data);
  v("optim", c.optim);
  v("schedule", c.schedule);
  v("train", c.train);
  v("eval", c.eval);
  v("dist", c.dist);
}

// ---- decoding ----

struct NameCollector {
  std::vector<std::string> names;
  template <class T>
  void operator()(const char* name, T&) {
    names.emplace_back(name);
  }
};

template <class T>
concept Section = requires(T& t, NameCollector& v) {
  fields(t, v);
};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

/// Where a value came from: a file (errors say file:line) or a --set override (errors quote the override).
struct Source {
  std::string name;
  bool has_lines;
};

std::string where(const Source& src, const YAML::Mark& mark) {
  if (src.has_lines && mark.line >= 0) return src.name + ":" + std::to_string(mark.line + 1);
  return src.name;
}

template <class T>
std::string expected() {
  if constexpr (std::is_same_v<T, bool>) return "a boolean (true/false)";
  else if constexpr (std::is_integral_v<T>) return "an integer";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::string>) return "a string";
  else if constexpr (is_vector<T>::value) return "a list of " + expected<typename T::value_type>().substr(2) + "s";
  else return "a section (a map of keys)";
}

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "nothing (null)";
  }
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

template <class T>
void decode(const YAML::Node& n, T& out, const std::string& key, const Source& src, const YAML::Mark& mark);

template <class S>
void decode_section(const YAML::Node& n, S& s, const std::string& key, const Source& src, const YAML::Mark& mark) {
  if (n.IsNull()) return;  // "eval:" with nothing under it keeps the defaults
  if (!n.IsMap() && key.empty())
    VT_FAIL("[config] ", where(src, mark), ": the top level must be a map of sections, got ", describe(n));
  if (!n.IsMap())
    VT_FAIL("[config] ", where(src, mark), ": '", key, "' expects a section (a map of keys), got ", describe(n));
  const std::string prefix = key.empty() ? "" : key + ".";
  std::set<std::string> seen;
  for (const auto& kv : n) {
    const YAML::Node& k = kv.first;
    if (!k.IsScalar()) VT_FAIL("[config] ", where(src, k.Mark()), ": keys under '", key, "' must be plain names");
    const std::string name = k.Scalar();
    if (!seen.insert(name).second) VT_FAIL("[config] ", where(src, k.Mark()), ": duplicate key '", prefix + name, "'");
    // The key's line: a null value's mark points past it, at the next token.
    const YAML::Mark value_mark = k.Mark();
    bool found = false;
    auto visit = [&](const char* field_name, auto& field) {
      if (!found && name == field_name) {
        found = true;
        decode(kv.second, field, prefix + name, src, value_mark);
      }
    };
    fields(s, visit);
    if (found) continue;
    NameCollector known;
    fields(s, known);
    std::string hint;
    for (const auto& cand : known.names)
      if (edit_distance(name, cand) <= 2) hint = " (did you mean '" + prefix + cand + "'?)";
    // timm's names (lr, drop_path, batch_size): the key their flag sets, from the one flag table.
    if (const TimmFlag* timm = find_timm_flag(name); timm && prefix + name != timm->key)
      hint = std::string(" (did you mean '") + timm->key + "'? it is what timm's " + timm->names + " sets)";
    VT_FAIL("[config] ", where(src, k.Mark()), ": unknown key '", prefix + name, "'", hint);
  }
}

template <class T>
void decode(const YAML::Node& n, T& out, const std::string& key, const Source& src, const YAML::Mark& mark) {
  if constexpr (Section<T>) {
    decode_section(n, out, key, src, mark);
  } else if constexpr (is_vector<T>::value) {
    if (!n.IsSequence())
      VT_FAIL("[config] ", where(src, mark), ": '", key, "' expects ", expected<T>(), ", got ", describe(n));
    T values;
    for (size_t i = 0; i < n.size(); ++i) {
      typename T::value_type v{};
      YAML::Mark m = n[i].Mark().line >= 0 ? n[i].Mark() : mark;
      decode(n[i], v, key + "[" + std::to_string(i) + "]", src, m);
      values.push_back(v);
    }
    out = std::move(values);
  } else {
    T v{};
    if (!n.IsScalar() || !YAML::convert<T>::decode(n, v))
      VT_FAIL("[config] ", where(src, mark), ": '", key, "' expects ", expected<T>(), ", got ", describe(n));
    out = v;
  }
}

/// Parses YAML text into `cfg` (fields not mentioned keep their values). A file must hold at least one section:
/// an empty one (or only comments) is more likely a mistake than a wish for every default.
void merge_yaml(Config& cfg, const std::string& text, const Source& src, bool allow_empty) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    VT_FAIL("[config] ", where(src, e.mark), ": YAML syntax error: ", e.msg);
  }
  if (!allow_empty && root.IsNull())
    VT_FAIL("[config] ", src.name, ": the config file is empty (no sections); start from one of configs/*.yaml");
  decode_section(root, cfg, "", src, root.Mark());
}

// ---- encoding ----

std::string yaml_scalar(const std::string& s) { return json_quote(s); }  // JSON strings are valid YAML
[[maybe_unused]] std::string yaml_scalar(bool b) { return b ? "true" : "false"; }
std::string yaml_scalar(int v) { return std::to_string(v); }
std::string yaml_scalar(int64_t v) { return std::to_string(v); }
std::string yaml_scalar(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
  std::string s(buf, res.ptr);
  // Always with a '.', so YAML 1.1 readers (PyYAML) see a float too: "2.0", "1.0e-05".
  if (s.find('.') == std::string::npos) {
    size_t e = s.find('e');
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  }
  return s;
}
template <class T>
std::string yaml_scalar(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += yaml_scalar(v[i]);
  }
  return s + "]";
}

struct YamlWriter {
  std::string& out;
  int indent;
  template <class T>
  void operator()(const char* name, T& field) {
    out.append(static_cast<size_t>(indent), ' ');
    out += name;
    out += ":";
    if constexpr (Section<T>) {
      out += "\n";
      YamlWriter inner{out, indent + 2};
      fields(field, inner);
    } else {
      out += ' ';
      out += yaml_scalar(field);
      out += '\n';
    }
  }
};

// ---- validation helpers ----

template <class T>
void require(bool ok, const char* key, const char* rule, const T& got) {
  if (!ok) VT_FAIL("[config] ", key, " must be ", rule, ", got ", got);
}

void require_one_of(const char* key, const std::string& value, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (value == a) return;
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  VT_FAIL("[config] ", key, " must be one of {", list, "}, got '", value, "'");
}

// Upper bounds for sizes: far beyond any real model or run (ViT-22B has embed_dim 6144, depth 48, 48 heads; ViT
// training uses patch 8-32, images up to a few thousand pixels, batches up to 64K), yet low enough that a typo
// fails here, naming the key, instead of in an allocation of terabytes or the creation of 100000 threads.
constexpr int64_t kMaxEmbedDim = 65536, kMaxDepth = 1024, kMaxHeads = 1024, kMaxImgSize = 16384, kMaxPatchSize = 1024,
                  kMaxInChans = 64, kMaxClasses = 1'000'000, kMaxWorkers = 512, kMaxBatch = 1 << 20,
                  kMaxAccum = 1 << 16, kMaxThreads = 4096, kMaxTokenSet = 1 << 20, kMaxSegSide = 1 << 16,
                  kMaxSequence = 1 << 24;
constexpr double kMaxMlpRatio = 64;

// The dotted name of every float key (lists included) with its values: all must be finite, whatever the key's
// own range check says (".inf" passes "> 0").
struct FiniteCheck {
  std::string prefix;
  template <class T>
  void operator()(const char* name, T& field) {
    const std::string key = prefix + name;
    if constexpr (Section<T>) {
      FiniteCheck inner{key + "."};
      fields(field, inner);
    } else if constexpr (std::is_floating_point_v<T>) {
      require(std::isfinite(field), key.c_str(), "a finite number", yaml_scalar(field));
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      for (double v : field) require(std::isfinite(v), key.c_str(), "a list of finite numbers", yaml_scalar(field));
    }
  }
};

void require_at_most(const char* key, int64_t value, int64_t bound, const char* why = "") {
  if (value > bound) VT_FAIL("[config] ", key, " must be <= ", bound, why, ", got ", value);
}
void require_at_most(const char* key, double value, double bound) {
  if (value > bound) VT_FAIL("[config] ", key, " must be <= ", bound, ", got ", value);
}

bool valid_device(const std::string& d) {
  if (d == "auto" || d == "cpu" || d == "cuda") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5) return false;
  return std::all_of(d.begin() + 5, d.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void AttentionConfig::validate() const {
  // The kinds models::make_attention builds.
  require_one_of("model.attention.type", type,
                 {"dense", "mita", "mita_route", "mita_compress", "agent", "agent_bias", "linear", "flatten", "inline",
                  "mhla", "pola", "bra"});
  require_one_of("model.attention.landmark_pool", landmark_pool, {"shifted", "patches", "sequence", "random"});
  require_one_of("model.attention.impl", impl, {"fused", "reference"});
  require_one_of("model.attention.shared_scale", shared_scale, {"official", "paper"});
  require(m >= 1, "model.attention.m", ">= 1", m);
  require(k >= 0, "model.attention.k", ">= 0 (0: m for mita, 2m for mita_route)", k);
  require(s >= 1, "model.attention.s", ">= 1", s);
  if (s > m) VT_FAIL("[config] model.attention.s (", s, ") must be <= model.attention.m (", m, ")");
  require(agent_num >= 1, "model.attention.agent_num", ">= 1", agent_num);
  require(n_win >= 1, "model.attention.n_win", ">= 1", n_win);
  require_at_most("model.attention.n_win", n_win, kMaxTokenSet);
  require(topk >= 1, "model.attention.topk", ">= 1", topk);
  if (type == "bra" && topk > n_win * n_win)
    VT_FAIL("[config] model.attention.topk (", topk, ") must be <= model.attention.n_win² (", n_win * n_win,
            " regions)");
  require_one_of("model.attention.bra_scale", bra_scale, {"head_dim", "qk_dim"});
  require_at_most("model.attention.m", m, kMaxTokenSet);
  require_at_most("model.attention.k", k, kMaxTokenSet);
  require_at_most("model.attention.agent_num", agent_num, kMaxTokenSet);
  if (type == "agent_bias" && landmark_pool == "sequence")
    VT_FAIL(
        "[config] model.attention.landmark_pool 'sequence' (1-D agents) goes with type agent, not agent_bias: its "
        "biases are laid out on a patch grid");
  const bool mita = is_mita();
  // dwc/gate belong to the mita types; other kinds ignore them (with a warning when the model is built), so
  // MiTA+DWC weights can be evaluated as dense with just --set model.attention.type=dense (Appendix C).
  if (mita && gate && !dwc)
    VT_FAIL("[config] model.attention.gate requires model.attention.dwc: true (MiTA + DWC + Gate)");
}

void ModelConfig::validate() const {
  require(!name.empty(), "model.name", "non-empty", "''");
  // 0 means "take it from the preset"; the model checks the combination once the preset is applied.
  require(img_size >= 0, "model.img_size", ">= 0", img_size);
  require(patch_size >= 0, "model.patch_size", ">= 0", patch_size);
  if (img_size > 0 && patch_size > 0 && img_size % patch_size != 0)
    VT_FAIL("[config] model.img_size (", img_size, ") must be a multiple of model.patch_size (", patch_size, ")");
  require(in_chans >= 0, "model.in_chans", ">= 0", in_chans);
  require(num_classes >= 0, "model.num_classes", ">= 0", num_classes);
  require(embed_dim >= 0, "model.embed_dim", ">= 0 (0: from the preset)", embed_dim);
  require(depth >= 0, "model.depth", ">= 0 (0: from the preset)", depth);
  require(num_heads >= 0, "model.num_heads", ">= 0 (0: from the preset)", num_heads);
  if (embed_dim > 0 && num_heads > 0 && embed_dim % num_heads != 0)
    VT_FAIL("[config] model.embed_dim (", embed_dim, ") must be divisible by model.num_heads (", num_heads, ")");
  require(mlp_ratio > 0, "model.mlp_ratio", "> 0", mlp_ratio);
  require(drop_rate >= 0 && drop_rate < 1, "model.drop_rate", "in [0, 1)", drop_rate);
  require(drop_path_rate >= 0 && drop_path_rate < 1, "model.drop_path_rate", "in [0, 1)", drop_path_rate);
  require(layer_norm_eps > 0, "model.layer_norm_eps", "> 0", layer_norm_eps);
  require_at_most("model.img_size", img_size, kMaxImgSize);
  require_at_most("model.patch_size", patch_size, kMaxPatchSize);
  require_at_most("model.in_chans", in_chans, kMaxInChans);
  require_at_most("model.num_classes", num_classes, kMaxClasses);
  require_at_most("model.embed_dim", embed_dim, kMaxEmbedDim);
  require_at_most("model.depth", depth, kMaxDepth);
  require_at_most("model.num_heads", num_heads, kMaxHeads);
  require_at_most("model.mlp_ratio", mlp_ratio, kMaxMlpRatio);
  require_one_of("model.pooling", pooling, {"", "mean", "cls"});
  attention.validate();
  decoder.validate();
}

void DecoderConfig::validate() const {
  require_one_of("model.decoder.type", type, {"", "cbt", "linear"});
  require(layers >= 1, "model.decoder.layers", ">= 1", layers);
  require(heads >= 1, "model.decoder.heads", ">= 1", heads);
  require(head_dim >= 1, "model.decoder.head_dim", ">= 1", head_dim);
  require(reps_grid >= 1, "model.decoder.reps_grid", ">= 1", reps_grid);
  require_at_most("model.decoder.layers", layers, kMaxDepth);
  require_at_most("model.decoder.heads", heads, kMaxHeads);
  require_at_most("model.decoder.head_dim", head_dim, kMaxEmbedDim);
  require_at_most("model.decoder.reps_grid", reps_grid, kMaxImgSize);
}

void DataConfig::validate() const {
  require(!dataset.empty(), "data.dataset", "non-empty", "''");
  require(hflip >= 0 && hflip <= 1, "data.hflip", "a probability in [0, 1]", hflip);
  require(workers >= 0, "data.workers", ">= 0", workers);
  require_at_most("data.workers", workers, kMaxWorkers, " (loader threads)");
  require(max_bad_files >= 0, "data.max_bad_files", ">= 0", max_bad_files);
  require(max_image_pixels >= 0, "data.max_image_pixels", ">= 0 (0: no limit)", max_image_pixels);
  require(train_limit >= 0, "data.train_limit", ">= 0 (0: all)", train_limit);
  require(test_limit >= 0, "data.test_limit", ">= 0 (0: all)", test_limit);
  require(mixup >= 0, "data.mixup", ">= 0 (0: off)", mixup);
  require(cutmix >= 0, "data.cutmix", ">= 0 (0: off)", cutmix);
  require(mixup_prob >= 0 && mixup_prob <= 1, "data.mixup_prob", "a probability in [0, 1]", mixup_prob);
  require(mixup_switch_prob >= 0 && mixup_switch_prob <= 1, "data.mixup_switch_prob", "a probability in [0, 1]",
          mixup_switch_prob);
  require_one_of("data.mixup_mode", mixup_mode, {"batch", "pair", "elem"});
  if (!aa.empty() && aa.rfind("rand-", 0) != 0)
    VT_FAIL("[config] data.aa must be \"\" or a RandAugment spec such as \"rand-m9-mstd0.5-inc1\", got '", aa, "'");
  require(reprob >= 0 && reprob <= 1, "data.reprob", "a probability in [0, 1]", reprob);
  require_one_of("data.remode", remode, {"const", "rand", "pixel"});
  require(recount >= 1, "data.recount", ">= 1", recount);
  require(aug_repeats >= 0, "data.aug_repeats", ">= 0 (0: off)", aug_repeats);
  require_one_of("data.train_interpolation", train_interpolation, {"bilinear", "bicubic", "random"});
  require(crop_pct > 0 && crop_pct <= 1, "data.crop_pct", "in (0, 1]", crop_pct);
  require(mean.empty() || mean.size() == 3, "data.mean", "[] or three numbers", yaml_scalar(mean));
  require(std.empty() || std.size() == 3, "data.std", "[] or three numbers", yaml_scalar(std));
  for (double s : std) require(s > 0, "data.std", "> 0", yaml_scalar(std));
  require_one_of("data.lra_task", lra_task, {"", "listops", "text", "retrieval", "image", "pathfinder"});
  require(max_length >= 0, "data.max_length", ">= 0", max_length);
  require_at_most("data.max_length", max_length, kMaxSequence);
  require(updates_per_epoch >= 0, "data.updates_per_epoch", ">= 0 (0: one pass over the training split)",
          updates_per_epoch);
  const bool lra = dataset == "lra";
  if (lra != !lra_task.empty())
    VT_FAIL("[config] data.dataset '", dataset, "' and data.lra_task '", lra_task,
            "' disagree: a Long Range Arena "
            "task (data.lra_task) goes with data.dataset: lra and only with it");
  if (!lra && (max_length > 0 || updates_per_epoch > 0))
    VT_FAIL("[config] data.", max_length > 0 ? "max_length" : "updates_per_epoch",
            " applies to data.dataset: lra only, got data.dataset '", dataset, "'");
}

void OptimConfig::validate() const {
  // What engine/trainer.cpp's make_optimizer builds (timm names; "sgd" and "nesterov" are SGD with Nesterov
  // momentum, "momentum" is plain momentum SGD).
  require_one_of("optim.opt", opt, {"adamw", "sgd", "momentum", "nesterov"});
  require(lr >= 0, "optim.lr", ">= 0 (0: optim.lr_base scaled by the global batch)", lr);
  if (lr == 0 && lr_base <= 0)
    VT_FAIL("[config] optim.lr is 0 (scale optim.lr_base) but optim.lr_base is 0 too: set optim.lr or optim.lr_base");
  require(weight_decay >= 0, "optim.weight_decay", ">= 0", weight_decay);
  require(momentum >= 0 && momentum < 1, "optim.momentum", "in [0, 1)", momentum);
  require(opt_eps > 0, "optim.opt_eps", "> 0", opt_eps);
  require(opt_betas.size() == 2, "optim.opt_betas", "a list of two numbers", yaml_scalar(opt_betas));
  for (double b : opt_betas) require(b >= 0 && b < 1, "optim.opt_betas", "in [0, 1)", yaml_scalar(opt_betas));
  require(clip_grad >= 0, "optim.clip_grad", ">= 0 (0: off)", clip_grad);
  require(smoothing >= 0 && smoothing < 1, "optim.smoothing", "in [0, 1)", smoothing);
  require(lr_base >= 0, "optim.lr_base", ">= 0", lr_base);
  require(lr_base_size > 0, "optim.lr_base_size", "> 0", lr_base_size);
  require_one_of("optim.lr_base_scale", lr_base_scale, {"linear", "sqrt"});
}

void ScheduleConfig::validate() const {
  require_one_of("schedule.sched", sched, {"cosine", "poly"});
  require(poly_power > 0, "schedule.poly_power", "> 0", poly_power);
  require(warmup_epochs >= 0, "schedule.warmup_epochs", ">= 0", warmup_epochs);
  require(warmup_lr >= 0, "schedule.warmup_lr", ">= 0", warmup_lr);
  require(min_lr >= 0, "schedule.min_lr", ">= 0", min_lr);
}

void TrainConfig::validate() const {
  require(epochs > 0, "train.epochs", "> 0", epochs);
  require(batch_size >= 0, "train.batch_size", ">= 0 (0: train.global_batch_size divided over the processes)",
          batch_size);
  require(global_batch_size >= 0, "train.global_batch_size", ">= 0 (0: train.batch_size per process)",
          global_batch_size);
  if (batch_size == 0 && global_batch_size == 0)
    VT_FAIL("[config] train.batch_size and train.global_batch_size are both 0: set one (per GPU, or in all)");
  require_at_most("train.batch_size", static_cast<int64_t>(batch_size), kMaxBatch);
  require_at_most("train.global_batch_size", static_cast<int64_t>(global_batch_size), kMaxBatch);
  require(valid_device(device), "train.device", "auto, cpu, cuda or cuda:N", "'" + device + "'");
  if (amp_dtype == "float16" || amp_dtype == "fp16" || amp_dtype == "f16" || amp_dtype == "half")
    VT_FAIL("[config] train.amp_dtype '", amp_dtype,
            "' is not supported: only bfloat16 (float16 would need loss "
            "scaling); set train.amp: false for f32");
  require_one_of("train.amp_dtype", amp_dtype, {"bfloat16"});
  require(threads >= 0, "train.threads", ">= 0 (0: all cores)", threads);
  require_at_most("train.threads", static_cast<int64_t>(threads), kMaxThreads);
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && static_cast<unsigned>(threads) > cores)
    spdlog::warn("[config] train.threads = {} is above this machine's {} cores: the threads will compete for them",
                 threads, cores);
  require(!output.empty(), "train.output", "non-empty", "''");
  require(log_interval > 0, "train.log_interval", "> 0", log_interval);
  require(grad_accum_steps >= 1, "train.grad_accum_steps", ">= 1", grad_accum_steps);
  require_at_most("train.grad_accum_steps", static_cast<int64_t>(grad_accum_steps), kMaxAccum);
  require(max_steps >= 0, "train.max_steps", ">= 0 (0: off)", max_steps);
  require(checkpoint_interval >= 0, "train.checkpoint_interval", ">= 0 (0: no checkpoint-<epoch> files)",
          checkpoint_interval);
  require(checkpoint_hist >= 1, "train.checkpoint_hist", ">= 1", checkpoint_hist);
  require(recovery_interval >= 0, "train.recovery_interval", ">= 0 (0: off)", recovery_interval);
  require(recovery_minutes >= 0 && std::isfinite(recovery_minutes), "train.recovery_minutes", ">= 0 (0: off)",
          recovery_minutes);
  require(model_ema_decay > 0 && model_ema_decay < 1, "train.model_ema_decay", "in (0, 1)", model_ema_decay);
}

void EvalConfig::validate() const {
  require(batch_size > 0, "eval.batch_size", "> 0", batch_size);
  require_at_most("eval.batch_size", static_cast<int64_t>(batch_size), kMaxBatch);
  require_at_most("eval.seg_long_side", static_cast<int64_t>(seg_long_side), kMaxSegSide);
  require(interval >= 1, "eval.interval", ">= 1", interval);
  require_one_of("eval.best_metric", best_metric, {"top1", "ema_top1", "loss", "ema_loss", "miou"});
  require(seg_short_side > 0, "eval.seg_short_side", "> 0", seg_short_side);
  require(seg_long_side >= seg_short_side, "eval.seg_long_side", ">= eval.seg_short_side", seg_long_side);
  require(seg_stride >= 0, "eval.seg_stride", ">= 0 (0: crop - 32)", seg_stride);
  require(!seg_scales.empty(), "eval.seg_scales", "a non-empty list", "[]");
  for (double s : seg_scales) require(s > 0, "eval.seg_scales", "> 0", yaml_scalar(seg_scales));
}

void DistConfig::validate() const { require(bucket_mb > 0, "dist.bucket_mb", "> 0", bucket_mb); }

void Config::validate() const {
  Config copy = *this;  // the field tables take non-const references
  FiniteCheck finite;
  fields(copy, finite);
  model.validate();
  data.validate();
  optim.validate();
  schedule.validate();
  train.validate();
  eval.validate();
  dist.validate();
  if (dist.zero1 && optim.opt != "adamw")
    VT_FAIL("[config] dist.zero1 shards AdamW's state: set optim.opt: adamw (got '", optim.opt, "')");
  if (eval.best_metric.rfind("ema_", 0) == 0 && !train.model_ema)
    VT_FAIL("[config] eval.best_metric '", eval.best_metric, "' needs train.model_ema: true");
  if (!model.pooling.empty() && data.dataset != "lra")
    VT_FAIL("[config] model.pooling '", model.pooling, "' applies to Long Range Arena models (data.dataset: lra) ",
            "only; the ViT pools its CLS token");
  const bool segmentation = !model.decoder.type.empty();
  if (segmentation != (data.dataset == "ade20k"))
    VT_FAIL("[config] model.decoder.type '", model.decoder.type, "' and data.dataset '", data.dataset,
            "' disagree: segmentation (a decoder) goes with data.dataset: ade20k and only with it");
  if ((eval.best_metric == "miou") != segmentation)
    VT_FAIL("[config] eval.best_metric '", eval.best_metric,
            "': miou is the segmentation metric (set it, and only "
            "it, with model.decoder)");
  if (schedule.deit_epoch_lag && schedule.sched_on_updates)
    VT_FAIL("[config] schedule.deit_epoch_lag applies to per-epoch schedules: set schedule.sched_on_updates: false");
}

Config config_from_yaml_string(const std::string& text, const std::string& source_name) {
  Config cfg;
  merge_yaml(cfg, text, Source{source_name, true}, true);
  cfg.validate();
  return cfg;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides,
                   const std::vector<std::pair<std::string, std::string>>& named) {
  std::ifstream f(path, std::ios::binary);
  VT_CHECK(f, "[config] cannot open config file '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  VT_CHECK(!f.bad(), "[config] cannot read config file '", path, "'");
  Config cfg;
  const std::string text = ss.str();
  if (is_timm_args_yaml(text)) {
    // timm's args.yaml: each key becomes the override of its config key (io/timm_args.h), over the defaults.
    for (const auto& o : timm_args_overrides(text, path)) apply_override_from(cfg, o, path + ": " + o);
  } else {
    merge_yaml(cfg, text, Source{path, true}, false);
  }
  for (const auto& [source, o] : named) apply_override_from(cfg, o, source);
  for (const auto& o : overrides) apply_override(cfg, o);
  cfg.validate();
  return cfg;
}

void apply_override(Config& cfg, const std::string& key_eq_value) {
  apply_override_from(cfg, key_eq_value, "--set " + key_eq_value);
}

namespace {

// The value of the field at `path` (dotted, split) as YAML text; false when there is none.
struct ValueFinder {
  std::vector<std::string> path;
  size_t depth = 0;
  std::string found;
  bool ok = false;
  template <class T>
  void operator()(const char* name, T& field) {
    if (ok || depth >= path.size() || path[depth] != name) return;
    if constexpr (Section<T>) {
      ++depth;
      fields(field, *this);
      if (!ok) --depth;
    } else if (depth + 1 == path.size()) {
      found = yaml_scalar(field);
      ok = true;
    }
  }
};

}  // namespace

std::string config_value_yaml(const Config& cfg, const std::string& dotted_key) {
  Config copy = cfg;  // the field tables take non-const references
  ValueFinder finder;
  std::stringstream keys(dotted_key);
  for (std::string part; std::getline(keys, part, '.');) finder.path.push_back(part);
  fields(copy, finder);
  VT_CHECK(finder.ok, "[config] no key '", dotted_key, "'");
  return finder.found;
}

void apply_override_from(Config& cfg, const std::string& key_eq_value, const std::string& source_name) {
  const Source src{source_name, false};
  size_t eq = key_eq_value.find('=');
  VT_CHECK(eq != std::string::npos && eq > 0, "[config] ", src.name,
           ": expected section.key=value (e.g. optim.lr=1e-3)");
  std::vector<std::string> path;
  std::stringstream keys(key_eq_value.substr(0, eq));
  for (std::string part; std::getline(keys, part, '.');) {
    VT_CHECK(!part.empty(), "[config] ", src.name, ": empty name in the dotted key");
    path.push_back(part);
  }
  VT_CHECK(!path.empty() && key_eq_value[eq - 1] != '.', "[config] ", src.name, ": empty name in the dotted key");
  YAML::Node value;
  try {
    value = YAML::Load(key_eq_value.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    VT_FAIL("[config] ", src.name, ": cannot parse the value as YAML: ", e.msg);
  }
  // Wrap the value in maps along the dotted path and decode it like a file, so the same checks apply.
  YAML::Node root(YAML::NodeType::Map);
  YAML::Node cur = root;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    cur[path[i]] = YAML::Node(YAML::NodeType::Map);
    cur.reset(cur[path[i]]);
  }
  cur[path.back()] = value;
  decode_section(root, cfg, "", src, YAML::Mark::null_mark());
}

std::string to_yaml(const Config& cfg) {
  Config copy = cfg;  // the field tables take non-const references
  std::string out = "# vitrain resolved config\n";
  YamlWriter writer{out, 0};
  fields(copy, writer);
  return out;
}

}  // namespace vt::io
