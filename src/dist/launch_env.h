// Where this process sits in a multi-process job, read from the launcher's environment variables:
// torchrun (and `vitrain launch`, which sets the same names), SLURM `srun`, or Open MPI `mpirun`, in that order
// of precedence. Without any of them the process is a single-process job.
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace vt::dist {

/// One process's place in the job: global rank/world, rank/world on this node, and where rank 0 serves the
/// rendezvous (see dist/rendezvous.h).
struct LaunchEnv {
  int rank = 0, world = 1, local_rank = 0, local_world = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Identifies the job in the rendezvous (VT_JOB_TOKEN, else TORCHELASTIC_RUN_ID, SLURM_JOB_ID, OMPI job id...).
  std::string job_token;
  std::string launcher;  // "single", "torchrun", "slurm", "mpirun"
  bool distributed() const { return world > 1; }
};

/// The process's place in the job from torchrun, SLURM or Open MPI variables (single process when none); a
/// malformed or inconsistent variable is an error naming it.
LaunchEnv launch_env_from(const std::function<std::optional<std::string>(const std::string&)>& getenv);

/// launch_env_from(the process environment).
LaunchEnv launch_env();

}  // namespace vt::dist
