// `vitrain convert`: reads timm-named safetensors, adapts them to the target architecture with the same code
// that loads timm weights for training (engine/timm_weights), checks the result against timm's state-dict keys
// and shapes, and writes it atomically.
#include "cli/convert_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/command_support.h"
#include "engine/timm_weights.h"
#include "io/safetensors.h"
#include "models/registry.h"

namespace vt::cli {
namespace {

struct ConvertArgs {
  std::string in, out, model, resize = "timm";
  int img_size = 0, num_classes = -1;
};

void run_convert(const ConvertArgs& a) {
  io::SafetensorsFile file = io::read_safetensors(a.in);
  const models::ViTConfig source = engine::infer_vit_config(file.tensors);
  // The target: the preset when named (its architecture must match the weights), else what the weights describe.
  models::ViTConfig target = a.model.empty() ? source : models::preset(a.model);
  if (!a.model.empty()) target.num_classes = source.num_classes, target.img_size = source.img_size;
  if (a.img_size > 0) target.img_size = a.img_size;
  if (a.num_classes >= 0) target.num_classes = a.num_classes;

  engine::TimmAdaptOptions opt;
  opt.resize = a.resize == "deit" ? engine::PosEmbedResize::deit : engine::PosEmbedResize::timm;
  opt.zero_new_head = true;
  for (const auto& line : engine::adapt_timm_weights(file.tensors, target, opt))
    std::printf("%s: %s\n", a.in.c_str(), line.c_str());
  engine::check_timm_compatible(file.tensors, target);  // what timm's load_state_dict(strict=True) will see

  file.metadata["format"] = "pt";  // what safetensors.torch writes; timm's loaders accept either
  if (!a.model.empty()) file.metadata["model"] = a.model;
  io::save_safetensors(a.out, file.tensors, file.metadata);
  std::printf("wrote %s: %zu tensors, img_size %lld, %lld classes, F32\n", a.out.c_str(), file.tensors.size(),
              static_cast<long long>(target.img_size), static_cast<long long>(target.num_classes));
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  auto* cmd = app.add_subcommand(
      "convert", "timm safetensors -> timm safetensors for another image size or class count (no .pth needed)");
  cmd->add_option("--in", args->in, "input weights (.safetensors, timm names)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "output weights (.safetensors)")->required();
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
