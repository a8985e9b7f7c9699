// What every vitrain subcommand shares: its config (a YAML file or the defaults, then --set overrides) and its
// ending (one "error: ..." line and exit 1 on an exception, else the body's exit code).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "io/config.h"

namespace vt::cli {

/// The YAML file at `path` (the defaults when empty), then `sets` in order, then `device` (when not empty) as
/// train.device; validated.
io::Config load_command_config(const std::string& path, std::vector<std::string> sets, const std::string& device = "");

/// Runs a subcommand's body from its CLI11 callback and ends the program through CLI11: an exception becomes one
/// "error: <what>" line and exit code 1; otherwise the body's return value is the exit code (0 = success).
[[noreturn]] void finish_command(const std::function<int()>& body);

}  // namespace vt::cli
