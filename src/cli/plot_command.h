// `vitrain plot RUN_DIR`: training curves from RUN_DIR/metrics.jsonl as PNG and SVG (see figures/run_plots.h).
#pragma once
#include <CLI/CLI.hpp>

namespace vt::cli {

/// Adds the `plot` subcommand; it runs from its own callback (prints the files written).
void add_plot_command(CLI::App& app);

}  // namespace vt::cli
