// `vitrain eval`'s output, kept apart from main() so the format lives next to its tests (engine/eval_results).
#include "cli/eval_output.h"

#include <CLI/CLI.hpp>
#include <cstdio>

namespace vt::cli {

void add_eval_output_options(CLI::App& eval, EvalOutputOptions& options) {
  eval.add_option("--results-file", options.results_file,
                  "write the results row (model, top1, top5, param_count, img_size, crop_pct, ...): "
                  "JSON if the name ends in .json, else CSV like timm's validate.py");
  eval.add_flag("--json", options.json, "also print the results row as one JSON line");
}

void print_eval_results(const engine::EvalResultsRow& row, const EvalOutputOptions& options) {
  std::printf("%s\n", engine::eval_summary_line(row).c_str());
  std::printf("%s: top-1 %.3f%%  top-5 %.3f%%  loss %.4f  (%lld images, %.0f img/s, %.2fM params, %s)\n",
              row.model.c_str(), row.top1, row.top5, row.loss, static_cast<long long>(row.images), row.img_per_s,
              static_cast<double>(row.param_count) / 1e6, row.amp ? "bf16 autocast" : "f32");
  if (row.bad_files > 0)
    std::printf("%lld unreadable images left out of the metrics (listed above)\n",
                static_cast<long long>(row.bad_files));
  if (options.json) std::printf("%s\n", engine::eval_results_json(row, 0).c_str());
  if (!options.results_file.empty()) {
    engine::write_eval_results(options.results_file, row);
    std::printf("results: %s\n", options.results_file.c_str());
  }
}

}  // namespace vt::cli
