// `vitrain plot RUN_DIR [-o DIR]`: reads RUN_DIR/metrics.jsonl, writes loss, lr, accuracy (segmentation: miou)
// charts against the epoch as PNG and SVG (figures/run_plots.h).
#include "cli/plot_command.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command_support.h"
#include "figures/run_plots.h"
#include "io/metrics.h"

namespace vt::cli {

void add_plot_command(CLI::App& app) {
  struct Options {
    std::string run_dir, out_dir;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("plot", "draw a run's loss, learning rate and accuracy against the epoch (PNG and SVG)");
  cmd->add_option("run_dir", opts->run_dir, "run directory (holds metrics.jsonl)")->required();
  cmd->add_option("-o,--out", opts->out_dir, "where to write the charts (default: RUN_DIR/plots)");
  cmd->callback([opts] {
    namespace fs = std::filesystem;
    finish_command([&] {
      const std::string out = opts->out_dir.empty() ? (fs::path(opts->run_dir) / "plots").string() : opts->out_dir;
      const auto rows = io::read_metrics((fs::path(opts->run_dir) / "metrics.jsonl").string());
      const auto files = figures::plot_metrics(rows, out);
      if (files.empty())
        std::printf("no curves to draw: %zu metrics lines without loss, lr, accuracy or mIoU\n", rows.size());
      for (const auto& f : files) std::printf("%s\n", f.c_str());
      return 0;
    });
  });
}

}  // namespace vt::cli
