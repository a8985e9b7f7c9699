// Segmentation commands: `vitrain seg-eval -c CONFIG -w WEIGHTS [--set ..] [--device ..] [--json OUT]` (mmseg's
// per-class table and one summary line over the validation split; `vitrain eval` forwards here for a config with
// model.decoder) and `vitrain viz seg -c CONFIG -w WEIGHTS --image I [--label L] -o OUT.png` (image | ground
// truth | prediction in the ADE20K palette).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "engine/weights_load.h"
#include "io/config.h"

namespace vt::cli {

/// Adds the `seg-eval` subcommand; it runs from its own callback.
void add_seg_eval_command(CLI::App& app);

/// The body of seg-eval for a loaded config: evaluates `weights` (loaded per `load`), prints the per-class table
/// and the summary line, writes the scores as JSON to `json_path` when not empty and prints them as one JSON line
/// when `print_json`. Returns the exit code (0).
int run_seg_eval(const io::Config& cfg, const std::string& weights, const engine::WeightsLoadOptions& load,
                 const std::string& json_path, bool print_json = false);

/// Adds `seg` under the `viz` subcommand.
void add_viz_seg_command(CLI::App& viz);

}  // namespace vt::cli
