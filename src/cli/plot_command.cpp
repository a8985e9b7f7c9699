// `vitrain plot RUN_DIR [-o DIR]`: reads RUN_DIR/metrics.jsonl, writes loss.png, lr.png, top1.png (segmentation:
// miou.png).
#include "cli/plot_command.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command_support.h"
#include "engine/plot.h"

namespace vt::cli {

void add_plot_command(CLI::App& app) {
  struct Options {
    std::string run_dir, out_dir;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("plot", "draw loss, lr and top-1 curves of a run as PNG files");
  cmd->add_option("run_dir", opts->run_dir, "run directory (holds metrics.jsonl)")->required();
  cmd->add_option("-o,--out", opts->out_dir, "where to write the PNGs (default: RUN_DIR/plots)");
  cmd->callback([opts] {
    namespace fs = std::filesystem;
    finish_command([&] {
      const std::string out = opts->out_dir.empty() ? (fs::path(opts->run_dir) / "plots").string() : opts->out_dir;
      const auto rows = engine::read_metrics((fs::path(opts->run_dir) / "metrics.jsonl").string());
      const auto files = engine::plot_metrics(rows, out);
      if (files.empty()) std::printf("no curves to draw: %zu metrics lines without loss, lr or top-1\n", rows.size());
      for (const auto& f : files) std::printf("%s\n", f.c_str());
      return 0;
    });
  });
}

}  // namespace vt::cli
