// The output options of `vitrain eval` (--results-file, --json) and the printing of its result, like timm's
// validate.py. main() registers the options on its eval subcommand and calls print_eval_results at the end.
#pragma once
#include <string>

#include "engine/eval_results.h"

namespace CLI {
class App;
}

namespace vt::cli {

/// Where `vitrain eval` writes its results row.
struct EvalOutputOptions {
  std::string results_file;  ///< F.json (JSON) or any other name (CSV, timm's default); empty: none
  bool json = false;         ///< print the row as one JSON line on stdout after the summary
};

/// Adds --results-file F and --json to the eval subcommand.
void add_eval_output_options(CLI::App& eval, EvalOutputOptions& options);

/// Prints validate.py's summary line and a human line (loss, images, img/s), then the JSON row if asked, and
/// writes the results file if one was given (naming it on stdout).
void print_eval_results(const engine::EvalResultsRow& row, const EvalOutputOptions& options);

}  // namespace vt::cli
