// The timm flag table, the args.yaml reader built on it, and the args.yaml writer.
#include "io/timm_args.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "io/config.h"

namespace vt::io {
namespace {

using A = TimmArg;

// Keys of timm's args.yaml that have no meaning here. `accepted` lists the values (YAML) that cannot change what
// we train: timm's default, or anything ("*") for a key that only affects speed, logging or BatchNorm (a ViT has
// none).
struct TimmIgnored {
  const char* dest;
  std::vector<const char*> accepted;
};

const std::vector<TimmIgnored>& timm_ignored() {
  // clang-format off
  static const std::vector<TimmIgnored> keys = {
      {"config", {"*"}}, {"dataset", {"''", "~"}}, {"train_split", {"train"}},
      {"val_split", {"validation", "val"}}, {"dataset_download", {"false"}}, {"class_map", {"''"}},
      {"pretrained", {"false"}}, {"pretrained_path", {"~"}}, {"no_resume_opt", {"false"}}, {"gp", {"~", "token"}},
      {"input_size", {"~"}}, {"in_chans", {"~", "3"}}, {"interpolation", {"''", "bicubic"}},
      {"channels_last", {"*"}}, {"torchscript", {"*"}}, {"fuser", {"*"}}, {"grad_checkpointing", {"*"}},
      {"fast_norm", {"*"}}, {"model_kwargs", {"{}", "~"}}, {"head_init_scale", {"~"}}, {"head_init_bias", {"~"}},
      {"torchcompile", {"*"}}, {"torchcompile_mode", {"*"}}, {"clip_mode", {"norm"}}, {"layer_decay", {"~"}},
      {"opt_kwargs", {"{}", "~"}}, {"lr_noise", {"~"}}, {"lr_noise_pct", {"*"}}, {"lr_noise_std", {"*"}},
      {"lr_cycle_mul", {"1.0"}}, {"lr_cycle_decay", {"*"}}, {"lr_cycle_limit", {"1"}}, {"lr_k_decay", {"1.0"}},
      {"epoch_repeats", {"0.0"}}, {"start_epoch", {"~"}}, {"decay_milestones", {"*"}}, {"decay_epochs", {"*"}},
      {"cooldown_epochs", {"0"}}, {"patience_epochs", {"*"}}, {"decay_rate", {"*"}}, {"no_aug", {"false"}},
      {"scale", {"[0.08, 1.0]"}}, {"ratio", {"[0.75, 1.3333333333333333]"}}, {"vflip", {"0.0"}},
      {"aug_splits", {"0"}}, {"jsd_loss", {"false"}}, {"bce_loss", {"false"}}, {"bce_sum", {"false"}},
      {"bce_target_thresh", {"~"}}, {"bce_pos_weight", {"~"}}, {"resplit", {"false"}}, {"cutmix_minmax", {"~"}},
      {"mixup_off_epoch", {"0"}}, {"drop_connect", {"~"}}, {"drop_block", {"~"}}, {"bn_momentum", {"*"}},
      {"bn_eps", {"*"}}, {"sync_bn", {"*"}}, {"dist_bn", {"*"}}, {"split_bn", {"*"}}, {"model_ema_force_cpu", {"*"}},
      {"model_ema_warmup", {"false"}}, {"worker_seeding", {"*"}}, {"save_images", {"*"}}, {"apex_amp", {"false"}},
      {"native_amp", {"*"}}, {"amp_impl", {"*"}}, {"no_ddp_bb", {"*"}}, {"synchronize_step", {"*"}},
      {"pin_mem", {"*"}}, {"no_prefetcher", {"*"}}, {"prefetcher", {"*"}}, {"tta", {"0"}}, {"local_rank", {"*"}},
      {"use_multi_epochs_loader", {"*"}}, {"log_wandb", {"*"}}, {"wandb_project", {"*"}}, {"wandb_tags", {"*"}},
      {"wandb_resume_id", {"*"}}, {"distributed", {"*"}}, {"world_size", {"*"}}, {"rank", {"*"}}, {"device", {"*"}},
      {"device_modules", {"*"}}, {"train_num_samples", {"~"}}, {"val_num_samples", {"~"}},
      {"input_img_mode", {"~"}}, {"input_key", {"~"}}, {"target_key", {"~"}}, {"dataset_trust_remote_code", {"*"}},
      {"resume_opt", {"*"}}, {"train_crop_mode", {"~"}}, {"color_jitter_prob", {"~"}},
      {"grayscale_prob", {"~"}}, {"gaussian_blur_prob", {"~"}},
  };
  // clang-format on
  return keys;
}

// Values equal as YAML: scalars as numbers when both are numbers (1e-5 == 1.0e-05), else as text.
bool same_value(const YAML::Node& a, const YAML::Node& b) {
  if (a.IsNull() || b.IsNull()) return a.IsNull() && b.IsNull();
  if (a.IsSequence() || b.IsSequence()) {
    if (!a.IsSequence() || !b.IsSequence() || a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!same_value(a[i], b[i])) return false;
    return true;
  }
  if (a.IsMap() || b.IsMap()) return a.IsMap() && b.IsMap() && a.size() == 0 && b.size() == 0;
  double x = 0, y = 0;
  if (YAML::convert<double>::decode(a, x) && YAML::convert<double>::decode(b, y))
    return x == y || std::abs(x - y) <= 1e-12 * std::max(std::abs(x), std::abs(y));
  return a.Scalar() == b.Scalar();
}

std::string flow(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

std::string long_name(const TimmFlag& f) {
  const std::string names = f.names;
  const size_t at = names.find("--");
  return at == std::string::npos ? names : names.substr(at, names.find(',', at) - at);
}

}  // namespace

const std::vector<TimmFlag>& timm_flags() {
  // names, dest (args.yaml key), config key, kind, args.yaml null means, implied override, help
  static const std::vector<TimmFlag> flags = {
      {"data_dir", "data_dir", "data.data_dir", A::value, nullptr, nullptr, "dataset folder (train/, val/)"},
      {"--data-dir", "data", "data.data_dir", A::value, nullptr, nullptr, "dataset folder (timm's newer spelling)"},
      {"--model", "model", "model.name", A::value, nullptr, nullptr,
       "model name (timm's, e.g. deit_small_patch16_224)"},
      {"--initial-checkpoint", "initial_checkpoint", "model.initial_checkpoint", A::value, "\"\"", nullptr,
       "start from these weights (fine-tuning)"},
      {"--resume", "resume", "train.resume", A::value, "\"\"", nullptr,
       "resume from a checkpoint, or 'auto' (the newest in the output folder)"},
      {"--num-classes", "num_classes", "model.num_classes", A::value, "0", nullptr, "classes (0: the model's)"},
      {"--img-size", "img_size", "model.img_size", A::value, "0", nullptr, "input size (0: the model's)"},
      {"--crop-pct", "crop_pct", "data.crop_pct", A::value, nullptr, nullptr, "evaluation center-crop fraction"},
      {"--mean", "mean", "data.mean", A::list, "[]", nullptr, "normalisation mean (3 numbers)"},
      {"--std", "std", "data.std", A::list, "[]", nullptr, "normalisation std (3 numbers)"},
      {"-b,--batch-size", "batch_size", "train.batch_size", A::value, nullptr, "train.global_batch_size=0",
       "per-GPU batch (global = b x GPUs x accumulation)"},
      {"-vb,--validation-batch-size", "validation_batch_size", "eval.batch_size", A::value, nullptr, nullptr,
       "evaluation batch"},
      {"--opt", "opt", "optim.opt", A::value, nullptr, nullptr, "adamw | sgd | momentum | nesterov"},
      {"--opt-eps", "opt_eps", "optim.opt_eps", A::value, nullptr, nullptr, "optimizer epsilon"},
      {"--opt-betas", "opt_betas", "optim.opt_betas", A::list, nullptr, nullptr, "AdamW betas (2 numbers)"},
      {"--momentum", "momentum", "optim.momentum", A::value, nullptr, nullptr, "SGD momentum"},
      {"--weight-decay", "weight_decay", "optim.weight_decay", A::value, nullptr, nullptr, "weight decay"},
      {"--clip-grad", "clip_grad", "optim.clip_grad", A::value, "0.0", nullptr, "max global gradient norm"},
      {"--sched", "sched", "schedule.sched", A::value, nullptr, nullptr, "cosine | poly"},
      {"--sched-on-updates", "sched_on_updates", "schedule.sched_on_updates", A::flag, nullptr, nullptr,
       "change the lr every update, not every epoch"},
      {"--lr", "lr", "optim.lr", A::value, "0.0", nullptr, "learning rate as is (default: --lr-base scaled)"},
      {"--lr-base", "lr_base", "optim.lr_base", A::value, nullptr, nullptr, "lr at --lr-base-size images"},
      {"--lr-base-size", "lr_base_size", "optim.lr_base_size", A::value, nullptr, nullptr, "global batch of --lr-base"},
      {"--lr-base-scale", "lr_base_scale", "optim.lr_base_scale", A::value, nullptr, nullptr, "linear | sqrt"},
      {"--warmup-lr", "warmup_lr", "schedule.warmup_lr", A::value, nullptr, nullptr, "warm-up start lr"},
      {"--min-lr", "min_lr", "schedule.min_lr", A::value, nullptr, nullptr, "cosine floor"},
      {"--epochs", "epochs", "train.epochs", A::value, nullptr, nullptr, "epochs"},
      {"--warmup-epochs", "warmup_epochs", "schedule.warmup_epochs", A::value, nullptr, nullptr, "warm-up epochs"},
      {"--warmup-prefix", "warmup_prefix", "schedule.warmup_prefix", A::flag, nullptr, nullptr,
       "start the cosine after the warm-up"},
      {"--hflip", "hflip", "data.hflip", A::value, nullptr, nullptr, "horizontal flip probability"},
      {"--aa", "aa", "data.aa", A::value, "\"\"", nullptr, "RandAugment, e.g. rand-m9-mstd0.5-inc1"},
      {"--aug-repeats", "aug_repeats", "data.aug_repeats", A::value, nullptr, nullptr, "repeated augmentation"},
      {"--reprob", "reprob", "data.reprob", A::value, nullptr, nullptr, "random erasing probability"},
      {"--remode", "remode", "data.remode", A::value, nullptr, nullptr, "random erasing mode (pixel)"},
      {"--recount", "recount", "data.recount", A::value, nullptr, nullptr, "random erasing count (1)"},
      {"--mixup", "mixup", "data.mixup", A::value, nullptr, nullptr, "Mixup alpha (0: off)"},
      {"--cutmix", "cutmix", "data.cutmix", A::value, nullptr, nullptr, "CutMix alpha (0: off)"},
      {"--mixup-prob", "mixup_prob", "data.mixup_prob", A::value, nullptr, nullptr, "Mixup/CutMix probability"},
      {"--mixup-switch-prob", "mixup_switch_prob", "data.mixup_switch_prob", A::value, nullptr, nullptr,
       "CutMix instead of Mixup probability"},
      {"--mixup-mode", "mixup_mode", "data.mixup_mode", A::value, nullptr, nullptr, "batch"},
      {"--smoothing", "smoothing", "optim.smoothing", A::value, nullptr, nullptr, "label smoothing"},
      {"--train-interpolation", "train_interpolation", "data.train_interpolation", A::value, nullptr, nullptr,
       "bicubic | bilinear"},
      {"--drop", "drop", "model.drop_rate", A::value, nullptr, nullptr, "dropout"},
      {"--drop-path", "drop_path", "model.drop_path_rate", A::value, "0.0", nullptr, "stochastic depth"},
      {"--model-ema", "model_ema", "train.model_ema", A::flag, nullptr, nullptr, "keep an EMA of the weights"},
      {"--model-ema-decay", "model_ema_decay", "train.model_ema_decay", A::value, nullptr, nullptr, "EMA decay"},
      {"--seed", "seed", "train.seed", A::value, nullptr, nullptr, "random seed"},
      {"--log-interval", "log_interval", "train.log_interval", A::value, nullptr, nullptr,
       "updates between progress lines"},
      {"--recovery-interval", "recovery_interval", "train.recovery_interval", A::value, nullptr, nullptr,
       "updates between recovery checkpoints (0: off)"},
      {"--checkpoint-hist", "checkpoint_hist", "train.checkpoint_hist", A::value, nullptr, nullptr,
       "checkpoint-<epoch> files kept"},
      {"-j,--workers", "workers", "data.workers", A::value, nullptr, nullptr, "loader threads"},
      {"--amp", "amp", "train.amp", A::flag, nullptr, nullptr, "bf16 autocast on CUDA"},
      {"--amp-dtype", "amp_dtype", "train.amp_dtype", A::value, nullptr, nullptr, "bfloat16"},
      {"--grad-accum-steps", "grad_accum_steps", "train.grad_accum_steps", A::value, nullptr, nullptr,
       "micro-batches per update"},
      {"--output", "output", "train.output", A::value, nullptr, nullptr, "output folder (with --experiment: DIR/NAME)"},
      {"--experiment", "experiment", "train.output", A::value, nullptr, nullptr,
       "run name: a sub-folder of --output (default output/train)"},
      {"--eval-metric", "eval_metric", "eval.best_metric", A::value, nullptr, nullptr, "top1 | loss | ..."},
  };
  return flags;
}

const TimmFlag* find_timm_flag(const std::string& name) {
  std::string n = name;
  while (!n.empty() && n.front() == '-') n.erase(n.begin());
  std::string dashed = n;
  for (char& c : dashed)
    if (c == '_') c = '-';
  for (const TimmFlag& f : timm_flags())
    if (n == f.dest || "--" + dashed == long_name(f)) return &f;
  return nullptr;
}

std::vector<std::string> timm_flag_overrides(const TimmFlag& flag, const std::vector<std::string>& values) {
  std::string value;
  if (flag.kind == TimmArg::flag) {
    value = "true";
  } else if (flag.kind == TimmArg::list) {
    value = "[";
    for (size_t i = 0; i < values.size(); ++i) value += (i ? ", " : "") + values[i];
    value += "]";
  } else {
    VT_CHECK(values.size() == 1, "[timm] ", long_name(flag), " takes one value");
    value = values[0];
  }
  std::vector<std::string> out{std::string(flag.key) + "=" + value};
  if (flag.also) out.emplace_back(flag.also);
  return out;
}

std::string timm_output_dir(const std::string& output, const std::string& experiment) {
  if (experiment.empty()) return output;
  return (output.empty() ? std::string("output/train") : output) + "/" + experiment;
}

bool is_unsupported_timm_flag(const std::string& flag) {
  if (flag.rfind("--", 0) != 0) return false;
  std::string dest = flag.substr(2, flag.find('=') == std::string::npos ? std::string::npos : flag.find('=') - 2);
  for (char& c : dest)
    if (c == '-') c = '_';
  if (dest == "config" || dest == "device") return false;  // vitrain train's own -c and --device
  if (dest == "color_jitter") return true;
  for (const auto& k : timm_ignored())
    if (dest == k.dest) return true;
  return false;
}

bool is_timm_args_yaml(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return false;  // the config reader names the syntax error
  }
  if (!root.IsMap() || root.size() == 0) return false;
  bool has_value = false;  // "model:\neval:\n" (empty sections) is ours
  for (const auto& kv : root) {
    if (kv.second.IsMap()) return false;
    has_value = has_value || kv.second.IsScalar() || kv.second.IsSequence();
  }
  return has_value;
}

std::vector<std::string> timm_args_overrides(const std::string& text, const std::string& path) {
  const YAML::Node root = YAML::Load(text);
  // timm's train.py steps its per-epoch scheduler with epoch + 1: no DeiT lag.
  std::vector<std::string> out{"schedule.deit_epoch_lag=false"};
  std::string output, experiment;
  const bool has_aa = root["aa"] && !root["aa"].IsNull() && !root["aa"].as<std::string>().empty();
  for (const auto& kv : root) {
    const std::string dest = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    const std::string where = path + ":" + std::to_string(kv.first.Mark().line + 1);
    if (dest == "output" || dest == "experiment") {
      (dest == "output" ? output : experiment) = v.IsNull() ? "" : v.as<std::string>();
      continue;
    }
    if (const TimmFlag* f = find_timm_flag(dest); f && f->dest == dest) {
      if (v.IsNull()) {
        if (f->if_null) out.push_back(std::string(f->key) + "=" + f->if_null);
      } else if (dest == "lr_base_scale" && v.IsScalar() && v.Scalar().empty()) {
        // timm's '' picks by optimizer: the square root for the Adam family, linear otherwise.
        const std::string opt = root["opt"] && root["opt"].IsScalar() ? root["opt"].Scalar() : "sgd";
        out.push_back(std::string(f->key) + "=" + (opt.find("adam") != std::string::npos ? "sqrt" : "linear"));
      } else if (dest == "amp_dtype" && v.IsScalar() && v.Scalar() == "float16") {
        // timm's default autocast dtype; here autocast is bf16 (f32's range: no loss scaling to mirror).
        out.push_back(std::string(f->key) + "=bfloat16");
      } else if (dest == "aug_repeats" && v.IsScalar()) {
        // timm declares it a float (3.0); it counts repeats.
        const double n = v.as<double>();
        VT_CHECK(n == std::floor(n), "[config] ", where, ": aug_repeats must be a whole number, got ", v.Scalar());
        out.push_back(std::string(f->key) + "=" + std::to_string(static_cast<int64_t>(n)));
      } else {
        out.push_back(std::string(f->key) + "=" + flow(v));
        if (f->also) out.emplace_back(f->also);
      }
      continue;
    }
    // timm disables colour jitter when RandAugment is on; without it we cannot jitter.
    if (dest == "color_jitter") {
      VT_CHECK(has_aa || v.IsNull() || same_value(v, YAML::Load("0.0")), "[config] ", where,
               ": timm key 'color_jitter: ", flow(v),
               "' without 'aa' cannot be honoured (no colour jitter here): set "
               "it to 0 or set aa (RandAugment replaces it, as in timm)");
      continue;
    }
    const TimmIgnored* ignored = nullptr;
    for (const auto& k : timm_ignored())
      if (dest == k.dest) ignored = &k;
    VT_CHECK(ignored, "[config] ", where, ": '", dest, "' is not a key of timm's args.yaml (", path,
             " looks like one: no sections)");
    bool ok = false;
    std::string allowed;
    for (const char* a : ignored->accepted) {
      if (std::string(a) == "*") {
        ok = true;
        continue;
      }
      const YAML::Node accepted = YAML::Load(a);
      ok = ok || same_value(v, accepted);
      allowed += (allowed.empty() ? "" : " or ") + flow(accepted);
    }
    VT_CHECK(ok, "[config] ", where, ": timm key '", dest, ": ", flow(v),
             "' cannot be honoured here (accepted: ", allowed, ")");
  }
  if (!output.empty() || !experiment.empty()) out.push_back("train.output=" + timm_output_dir(output, experiment));
  return out;
}

std::string to_timm_args_yaml(const Config& cfg) {
  std::string out = "# vitrain resolved config in timm's args.yaml keys (vitrain train -c args.yaml reads it)\n";
  for (const TimmFlag& f : timm_flags()) {
    if (std::string(f.dest) == "data" || std::string(f.dest) == "experiment") continue;  // spelled by data_dir, output
    out += std::string(f.dest) + ": " + config_value_yaml(cfg, f.key) + "\n";
  }
  return out;
}

}  // namespace vt::io
