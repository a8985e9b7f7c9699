// `vitrain bench`: training/inference throughput and peak memory on synthetic data (engine/bench).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "engine/bench.h"

namespace vt::cli {

/// What the bench subcommand fills in from its options.
struct BenchCommand {
  engine::BenchOptions options;
  std::string json_path;  ///< appends the result's JSON line here too when non-empty
};

/// Registers `bench` and its options on `app`; returns the subcommand (true when it was given).
CLI::App* add_bench_command(CLI::App& app, BenchCommand& cmd);

/// Runs the benchmark, prints a readable summary then the JSON line on stdout; throws on error.
void run_bench_command(const BenchCommand& cmd);

}  // namespace vt::cli
