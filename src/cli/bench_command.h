// `vitrain bench`: training/inference throughput and peak memory on synthetic data (engine/bench).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/bench.h"

namespace vt::cli {

/// What the bench subcommand fills in from its options.
struct BenchCommand {
  engine::BenchOptions options;
  std::string json_path;          ///< appends the result's JSON line here too when non-empty
  std::string config_path;        ///< --config: model (and, with a decoder, the segmentation task) from a YAML
  std::vector<std::string> sets;  ///< --set overrides of that config
  CLI::Option* batch_size_option = nullptr;          ///< to tell an explicit --batch-size from the default
  CLI::Option* amp_option = nullptr;                 ///< likewise for --amp
  std::vector<CLI::Option*> sequence_shape_options;  ///< --dim, --depth, ...: only meaningful with --sequence
  std::string bench = "train";  ///< benchmark.py --bench: train | inference | both (inference: --infer)
  int img_size = 0;             ///< benchmark.py --img-size: the model's input size (0: the preset's)
};

/// Registers `bench` (alias `benchmark`, with timm benchmark.py's -m, -b, --bench, --img-size, --results-file)
/// and its options on `app`; returns the subcommand (true when it was given).
CLI::App* add_bench_command(CLI::App& app, BenchCommand& cmd);

/// Runs the benchmark, prints a readable summary then the JSON line on stdout; throws on error.
void run_bench_command(const BenchCommand& cmd);

}  // namespace vt::cli
