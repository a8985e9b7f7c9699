// `vitrain data make-lra {listops|pathfinder} OUT_DIR`: writes a ListOps or Pathfinder set of our own in the LRA
// release's layout, which the LRA task then reads like the downloaded one.
#pragma once

namespace CLI {
class App;
}

namespace vt::cli {

/// Adds `make-lra` below the `data` subcommand.
void add_make_lra_command(CLI::App& data);

}  // namespace vt::cli
