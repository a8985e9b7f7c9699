#include "cli/command_support.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/error.h"

namespace vt::cli {

io::Config load_command_config(const std::string& path, std::vector<std::string> sets, const std::string& device,
                               const std::vector<std::pair<std::string, std::string>>& flags) {
  if (!device.empty()) sets.push_back("train.device=" + device);  // last, so it wins over --set
  if (!path.empty()) return io::load_config(path, sets, flags);
  io::Config cfg;
  for (const auto& [source, s] : flags) io::apply_override_from(cfg, s, source);
  for (const auto& s : sets) io::apply_override(cfg, s);
  cfg.validate();
  return cfg;
}

engine::WeightsLoadOptions RunOptions::weights_options() const {
  return {ema ? engine::WeightsPick::ema : engine::WeightsPick::weights, !non_strict};
}

io::Config RunOptions::load() const { return load_command_config(config, sets, device, flag_sets); }

void add_run_options(CLI::App& cmd, RunOptions& o, const RunOptionsSpec& spec) {
  auto* config = cmd.add_option("-c,--config", o.config, spec.config_help)->check(CLI::ExistingFile);
  config->description(std::string(spec.config_help) + " (ours, or the args.yaml timm's train.py writes)");
  if (spec.config_required) config->required();
  if (spec.weights) {
    cmd.add_option("-w,--weights,--checkpoint", o.weights,
                   "weights: .safetensors (timm, ours, a training checkpoint) or a PyTorch .pth/.pt/.bin")
        ->required()
        ->check(CLI::ExistingFile);
    cmd.add_flag("--ema,--use-ema", o.ema, "a training checkpoint's EMA weights (ours: ema.*; DeiT's model_ema)");
    cmd.add_flag("--non-strict", o.non_strict,
                 "load weights with missing or unexpected tensors (listed in a warning) instead of failing");
  }
  cmd.add_option("--set", o.sets, "override a config key, e.g. --set optim.lr=1e-3 (repeatable)");
  if (spec.device) cmd.add_option("--device", o.device, "cuda:0 | cpu | auto (overrides train.device)");
}

void print_error(const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  const auto* vt_error = dynamic_cast<const Error*>(&e);
  const char* debug = std::getenv("VITRAIN_DEBUG");
  if (vt_error && !vt_error->where().empty() && debug && std::string(debug) == "1")
    std::fprintf(stderr, "  (thrown at %s)\n", vt_error->where().c_str());
}

void finish_command(const std::function<int()>& body) {
  int code = 1;
  try {
    code = body();
  } catch (const std::exception& e) {
    print_error(e);
    throw CLI::RuntimeError(1);
  }
  std::fflush(stdout);
  if (code != 0) throw CLI::RuntimeError(code);
  throw CLI::Success();  // done: main has nothing else to run
}

}  // namespace vt::cli
