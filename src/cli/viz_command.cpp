// `vitrain viz experts`: runs one image through a MiTA model and draws its routing (see viz_command.h).
#include "cli/viz_command.h"

#include <cstdio>
#include <memory>

#include "engine/viz_experts.h"

namespace vt::cli {

io::Config load_analysis_config(const std::string& path, std::vector<std::string> sets, const std::string& device) {
  if (!device.empty()) sets.push_back("train.device=" + device);  // last, so it wins over --set
  if (!path.empty()) return io::load_config(path, sets);
  io::Config cfg;
  for (const auto& s : sets) io::apply_override(cfg, s);
  cfg.validate();
  return cfg;
}

void add_viz_command(CLI::App& app) {
  struct Options {
    std::string config, device;
    std::vector<std::string> sets;
    engine::VizExpertsOptions viz;
  };
  auto opts = std::make_shared<Options>();
  auto* viz = app.add_subcommand("viz", "draw what a model does on one image (PNG)");
  viz->require_subcommand(1);
  auto* experts = viz->add_subcommand(
      "experts", "MiTA routing on one image: per layer the keys each expert collected and the queries routed to it "
                 "(Figure 3), and how many experts selected each token across depth (Figure 4)");
  experts->add_option("-c,--config", opts->config, "YAML config file")->check(CLI::ExistingFile);
  experts->add_option("-w,--weights", opts->viz.weights, "weights (.safetensors)")
      ->required()
      ->check(CLI::ExistingFile);
  experts->add_option("-i,--image", opts->viz.image, "image file (JPEG or PNG)")->required()->check(CLI::ExistingFile);
  experts->add_option("-o,--out", opts->viz.out_dir, "output folder")->required();
  experts->add_option("--head", opts->viz.head, "attention head to draw (default 0)");
  experts->add_option("--set", opts->sets, "override a config key (repeatable)");
  experts->add_option("--device", opts->device, "cuda:0 | cpu | auto (overrides train.device)");
  experts->callback([opts] {
    try {
      const io::Config cfg = load_analysis_config(opts->config, opts->sets, opts->device);
      for (const auto& f : engine::viz_experts(cfg, opts->viz)) std::printf("%s\n", f.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      throw CLI::RuntimeError(1);
    }
    std::fflush(stdout);
    throw CLI::Success();  // done: main has nothing else to run
  });
}

}  // namespace vt::cli
