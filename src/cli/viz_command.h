// `vitrain viz experts --config C --weights W --image I --out DIR`: the paper's Figures 3 and 4 for one image
// (analysis/viz_experts.h); `vitrain viz seg` (cli/seg_command.h): a segmentation picture of one image.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "io/config.h"

namespace vt::cli {

/// Adds the `viz` subcommand (with `experts` and `seg`); it runs from its own callback (prints the files written).
void add_viz_command(CLI::App& app);

}  // namespace vt::cli
