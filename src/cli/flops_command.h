// `vitrain flops`: parameters and multiply-accumulates per image of a config's model (models/flops.h), as a
// per-module table like fvcore's flop_count_table and a total line; registered from main() by one call.
#pragma once
#include <string>

#include "models/flops.h"

namespace CLI {
class App;
}

namespace vt::cli {

/// Adds the `flops` subcommand (--config, --model, --set, --json). It runs inside app parsing and ends the
/// program's parse with CLI::Success, or CLI::RuntimeError(1) after printing the error.
void add_flops_command(CLI::App& app);

/// The per-module table, then the total line "params 22.05M  MACs 4.43G (all matmuls) / 4.30G (fvcore-style)".
std::string flops_table(const std::string& model_name, const models::FlopsReport& report);

/// The report as one JSON object (integers: parameters and MACs per image).
std::string flops_json(const std::string& model_name, const models::FlopsReport& report);

}  // namespace vt::cli
