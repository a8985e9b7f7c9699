// `vitrain convert`: reads any weights file (engine/weights_file: safetensors, our training checkpoints, torch
// .pth), takes the raw or EMA weights, checks the tensors against the architecture they describe (strict unless
// --non-strict), adapts them (pos_embed resampled, head dropped or replaced) with the code that loads timm weights
// for training, and writes safetensors or a torch state dict in timm's / the official MiTA layout.
#include "cli/convert_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "cli/command_support.h"
#include "engine/timm_weights.h"
#include "engine/weight_layouts.h"
#include "engine/weights_file.h"
#include "engine/weights_load.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "models/registry.h"

namespace vt::cli {
namespace {

struct ConvertArgs {
  std::string in, out, model, resize = "timm", layout = "official";
  int img_size = 0, num_classes = -1;
  bool ema = false, non_strict = false;
};

const Tensor* find(const io::NamedTensors& w, const std::string& suffix) {
  for (const auto& [n, t] : w)
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) return &t;
  return nullptr;
}

// The attention kind whose parameters the tensors hold (plain MiTA has exactly dense attention's tensors, so it
// converts as dense). m and k do not shape any parameter; 1 keeps the structural model valid at any size.
models::AttentionConfig attention_of(const io::NamedTensors& w, models::ViTConfig& cfg) {
  models::AttentionConfig a;
  a.m = 1, a.k = 1;
  if (find(w, ".attn.qkvg.weight") || find(w, ".attn.dwc.weight")) {
    a.type = "mita";
    a.gate = find(w, ".attn.qkvg.weight") != nullptr;
    a.dwc = find(w, ".attn.dwc.weight") != nullptr;
  } else if (const Tensor* an = find(w, ".attn.an_bias"); an && an->dim() == 4) {
    a.type = "agent_bias";
    a.agent_num = an->size(1);
    cfg.num_heads = an->size(0);
  } else if (find(w, ".attn.q_norm.weight")) {
    a.type = "linear";
    // Only a one-head module lacks the output projection (official: to_out = Identity); any other count has it.
    if (!find(w, ".attn.proj.weight")) cfg.num_heads = 1;
    else if (cfg.num_heads == 1) cfg.num_heads = 2;
  }
  return a;
}

std::vector<std::string> expected_names(const models::ViTConfig& cfg) {
  std::vector<std::string> names;
  if (cfg.attention.type == "dense") {
    for (const auto& [n, s] : engine::timm_state_dict_spec(cfg)) names.push_back(n);
  } else {
    for (const auto& [n, t] : models::VisionTransformer(cfg).state_dict()) names.push_back(n);
  }
  return names;
}

void write_weights(const std::string& path, const io::NamedTensors& tensors, const std::string& model) {
  if (engine::is_torch_path(path)) return io::save_torch_state_dict(path, tensors);
  std::map<std::string, std::string> meta{{"format", "pt"}};  // what safetensors.torch writes
  if (!model.empty()) meta["model"] = model;
  io::save_safetensors(path, tensors, meta);
}

void run_convert(const ConvertArgs& a) {
  engine::WeightsFile file =
      engine::load_weights_file(a.in, a.ema ? engine::WeightsPick::ema : engine::WeightsPick::weights);
  for (const auto& x : file.left_out) std::printf("%s: left out %s\n", a.in.c_str(), x.c_str());
  for (const auto& line : engine::from_official_layout(file.tensors))
    std::printf("%s: %s\n", a.in.c_str(), line.c_str());
  io::NamedTensors& w = file.tensors;

  const bool segmenter =
      std::any_of(w.begin(), w.end(), [](const auto& nt) { return nt.first.rfind("decoder.", 0) == 0; });
  models::ViTConfig target;
  if (segmenter) {
    VT_CHECK(a.model.empty() && a.img_size == 0 && a.num_classes < 0, "[convert] '", a.in, "' is a whole Segmenter ",
             "(encoder. + decoder.): --model, --img-size and --num-classes apply to ViT weights only");
  } else {
    const models::ViTConfig source = engine::infer_vit_config(w);
    // The target: the preset when named (its architecture must match the weights), else what the weights describe.
    target = a.model.empty() ? source : models::preset(a.model);
    if (!a.model.empty()) target.num_classes = source.num_classes, target.img_size = source.img_size;
    target.attention = attention_of(w, target);
    // Strictness first, on the weights as they are (timm's load_state_dict(strict=True) of the source model).
    models::ViTConfig as_read = target;
    as_read.img_size = source.img_size, as_read.num_classes = source.num_classes;
    const engine::WeightsFit fit = engine::compare_names(expected_names(as_read), w);
    engine::enforce_fit(fit, a.in, "a " + target.attention.type + "-attention ViT's state dict", !a.non_strict);
    std::erase_if(w, [&](const auto& nt) {
      return std::find(fit.unexpected.begin(), fit.unexpected.end(), nt.first) != fit.unexpected.end();
    });
    if (a.img_size > 0) target.img_size = a.img_size;
    if (a.num_classes >= 0) target.num_classes = a.num_classes;
    engine::TimmAdaptOptions opt;
    opt.resize = a.resize == "deit" ? engine::PosEmbedResize::deit : engine::PosEmbedResize::timm;
    opt.zero_new_head = true;
    for (const auto& line : engine::adapt_timm_weights(w, target, opt))
      std::printf("%s: %s\n", a.in.c_str(), line.c_str());
    // What timm's load_state_dict(strict=True) will see; other kinds load into the official MiTA modules.
    if (target.attention.type == "dense" && fit.exact()) engine::check_timm_compatible(w, target);
  }
  if (a.layout == "official") engine::to_official_layout(w);
  for (auto& [name, t] : w) t = t.contiguous();
  write_weights(a.out, w, a.model);
  std::printf("wrote %s (%s, %s layout): %zu tensors", a.out.c_str(),
              engine::is_torch_path(a.out) ? "torch" : "safetensors", a.layout.c_str(), w.size());
  if (!segmenter)
    std::printf(", %s attention, img_size %lld, %lld classes", target.attention.type.c_str(),
                static_cast<long long>(target.img_size), static_cast<long long>(target.num_classes));
  std::printf("\n");
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  auto* cmd = app.add_subcommand(
      "convert",
      "weights in any format (safetensors, training checkpoint, .pth) -> safetensors or .pth in timm's / "
      "the official MiTA layout, for another image size or class count");
  cmd->add_option("--in", args->in, "input weights (.safetensors, a training checkpoint, .pth/.pt/.bin)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "output weights: .pth/.pt/.bin writes a torch state dict, else safetensors")
      ->required();
  cmd->add_flag("--ema", args->ema, "take a training checkpoint's EMA weights instead of the raw ones");
  cmd->add_option("--layout", args->layout,
                  "official (default: timm's names; MiTA kinds as the official MiTA-DeiT modules) | vitrain (ours)")
      ->check(CLI::IsMember({"official", "vitrain"}));
  cmd->add_flag("--non-strict", args->non_strict,
                "drop unexpected tensors and go on without missing ones (listed in a warning) instead of failing");
  cmd->add_option("--model", args->model, "preset the weights must fit (e.g. deit_tiny_patch16_224)");
  cmd->add_option("--img-size", args->img_size, "new image size: pos_embed resampled bicubically")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--num-classes", args->num_classes, "new class count: 0 drops the head, K a zero [K, C] head")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--resize", args->resize, "pos_embed resampling: timm (antialiased, default) | deit (plain)")
      ->check(CLI::IsMember({"timm", "deit"}));
  cmd->callback([args] {
    finish_command([&] {
      run_convert(*args);
      return 0;
    });
  });
}

}  // namespace vt::cli
