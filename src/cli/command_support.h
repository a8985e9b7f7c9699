// What every vitrain subcommand shares: its config (a YAML file or the defaults, then --set overrides) and its
// ending (one "error: ..." line and exit 1 on an exception, else the body's exit code).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "engine/weights_load.h"
#include "io/config.h"

namespace vt::cli {

/// The YAML file at `path` (ours or timm's args.yaml; the defaults when empty), then the timm flags' overrides
/// (`flags`: {the flag as given, "key=value"}), then `sets` in order, then `device` (when not empty) as
/// train.device; validated.
io::Config load_command_config(const std::string& path, std::vector<std::string> sets, const std::string& device = "",
                               const std::vector<std::pair<std::string, std::string>>& flags = {});

/// The options of a config-driven subcommand, registered by add_run_options.
struct RunOptions {
  std::string config, weights, device;
  std::vector<std::string> sets;
  std::vector<std::pair<std::string, std::string>> flag_sets;  ///< timm flags' overrides (cli/timm_flags.h)
  bool ema = false, non_strict = false;                        ///< with weights: --ema, --non-strict
  /// load_command_config(config, sets, device, flag_sets).
  io::Config load() const;
  /// How --weights loads: --ema picks the EMA weights, --non-strict allows missing / unexpected tensors.
  engine::WeightsLoadOptions weights_options() const;
};

/// Which of the shared options a subcommand takes and how it describes --config.
struct RunOptionsSpec {
  const char* config_help = "YAML config file";
  bool config_required = false;
  bool weights = false;  ///< -w/--weights (a required, existing weights file), --ema, --non-strict
  bool device = true;    ///< --device (a command that runs no model has none)
};

/// Registers -c/--config (an existing file), -w/--weights with --ema and --non-strict (per spec), --set
/// (repeatable) and --device on `cmd`,
/// writing into `o` (which must outlive the parse).
void add_run_options(CLI::App& cmd, RunOptions& o, const RunOptionsSpec& spec = {});

/// "error: <what>" on stderr; with VITRAIN_DEBUG=1 in the environment also the source position of a vt::Error.
void print_error(const std::exception& e);

/// Runs a subcommand's body from its CLI11 callback and ends the program through CLI11: an exception becomes one
/// "error: <what>" line and exit code 1; otherwise the body's return value is the exit code (0 = success).
[[noreturn]] void finish_command(const std::function<int()>& body);

}  // namespace vt::cli
