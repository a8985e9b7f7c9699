// `vitrain launch -n N [--master-port P] -- train --config ...`: one process per local GPU, torchrun style.
#pragma once
#include <CLI/CLI.hpp>

namespace vt::cli {

/// Adds the `launch` subcommand: starts N copies of this binary (or of --exec PROGRAM) with RANK, WORLD_SIZE,
/// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, VT_JOB_TOKEN and NCCL_NVLS_ENABLE=0 (unless set),
/// forwards SIGINT/SIGTERM to them, and stops them all when one fails; it runs from its own callback.
void add_launch_command(CLI::App& app);

}  // namespace vt::cli
