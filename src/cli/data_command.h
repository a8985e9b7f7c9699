// `vitrain data check DIR` and `vitrain data make-lra ...`: registered on the main CLI11 app by one call from main().
#pragma once

namespace CLI {
class App;
}

namespace vt::cli {

/// Adds the `data` subcommand (with `check DIR [-j N]` and `make-lra`, cli/make_lra_command.h). It runs inside app parsing and ends the program's
/// parse with CLI::Success (exit 0: every file decodes) or CLI::RuntimeError(1) (bad files or an error).
void add_data_command(CLI::App& app);

}  // namespace vt::cli
