// `vitrain viz experts --config C --weights W --image I --out DIR`: the paper's Figures 3 and 4 for one image
// (engine/viz_experts.h).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "io/config.h"

namespace vt::cli {

/// Adds the `viz` subcommand (with `experts`); it runs from its own callback (prints the files written).
void add_viz_command(CLI::App& app);

/// The config of an analysis command: the YAML file (or the defaults when `path` is empty), then `sets` in order,
/// then `device` (when not empty) as train.device; validated.
io::Config load_analysis_config(const std::string& path, std::vector<std::string> sets, const std::string& device);

}  // namespace vt::cli
