// `vitrain viz experts`: runs one image through a MiTA model and draws its routing (see viz_command.h).
#include "cli/viz_command.h"

#include <cstdio>
#include <memory>

#include "cli/command_support.h"
#include "cli/seg_command.h"
#include "analysis/viz_experts.h"

namespace vt::cli {

void add_viz_command(CLI::App& app) {
  struct Options {
    RunOptions run;
    analysis::VizExpertsOptions viz;
    std::string head = "mean";
  };
  auto opts = std::make_shared<Options>();
  auto* viz = app.add_subcommand("viz", "draw what a model does on one image (PNG)");
  viz->require_subcommand(1);
  auto* experts = viz->add_subcommand(
      "experts",
      "MiTA routing on one image: per layer the keys each expert collected and the queries routed to it "
      "(Figure 3), and how many experts selected each token across depth (Figure 4)");
  add_run_options(*experts, opts->run, {.weights = true});
  experts->add_option("-i,--image", opts->viz.image, "image file (JPEG or PNG)")->required()->check(CLI::ExistingFile);
  experts->add_option("-o,--out", opts->viz.out_dir, "output folder")->required();
  experts->add_option("--head", opts->head,
                      "attention head to draw (0, 1, ...), or 'mean': every expert's key and query shares averaged "
                      "over the heads, as the paper's Figure 3 (default mean)");
  experts->callback([opts] {
    finish_command([&] {
      opts->viz.weights = opts->run.weights;
      opts->viz.head = analysis::parse_head(opts->head);
      for (const auto& f : analysis::viz_experts(opts->run.load(), opts->viz)) std::printf("%s\n", f.c_str());
      return 0;
    });
  });
  add_viz_seg_command(*viz);
}

}  // namespace vt::cli
