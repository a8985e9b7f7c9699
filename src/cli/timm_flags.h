// timm's command lines on vitrain's subcommands: train.py's flags on `train` (from the one table in
// io/timm_args.h), validate.py's on `eval` / `validate`, benchmark.py's on `bench` / `benchmark`. Each flag becomes
// the --set override of its config key, so a timm command line and its --set twin resolve to the same config.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/timm_args.h"

namespace vt::cli {

/// The timm flags registered on one subcommand and what the command line gave them.
struct TimmFlagOptions {
  struct Entry {
    const io::TimmFlag* flag;
    CLI::Option* option;
    std::vector<std::string> values;
  };
  std::vector<Entry> entries;  ///< stable addresses: reserved before the options are registered
  /// "key=value" overrides of the flags given, in the table's order; --output/--experiment make one train.output.
  std::vector<std::string> overrides() const;
  /// The flags given and their override, for error messages ("--lr 5e-4" -> "optim.lr=5e-4").
  std::vector<std::pair<std::string, std::string>> sourced_overrides() const;
  /// --output and --experiment when --experiment was given: a new run goes to a fresh DIR/NAME[-n] folder.
  std::optional<std::pair<std::string, std::string>> experiment() const;
};

/// Registers every row of io::timm_flags() on `train` (the positional DATA_DIR included).
void add_timm_train_flags(CLI::App& train, TimmFlagOptions& o);

/// validate.py's flags on `eval`: DATA_DIR / --data-dir, -m/--model, -b/--batch-size (eval.batch_size),
/// --img-size, --crop-pct, --num-classes, --mean, --std; --checkpoint and --use-ema are added by the caller as
/// aliases of -w and --ema.
void add_timm_validate_flags(CLI::App& eval, TimmFlagOptions& o);

/// timm writes some short flags with two letters (-vb); CLI11 takes one letter: rewrites them to the long name.
std::vector<std::string> timm_short_flags_to_long(int argc, char** argv);

}  // namespace vt::cli
