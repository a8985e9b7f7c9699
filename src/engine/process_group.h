// The data-parallel side of a training run: which process this is (a test's in-process communicator, NCCL across
// the processes of a launched job, or one process), its device, and the DataParallel wrapper of the optimizer.
#pragma once
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "core/device.h"
#include "dist/communicator.h"
#include "dist/data_parallel.h"
#include "io/config.h"
#include "nn/module.h"
#include "optim/optimizer.h"

namespace vt::engine {

struct ProcessGroup {
  int rank = 0, world = 1;
  Device device;
  dist::Communicator* comm = nullptr;         // null: a single process
  std::unique_ptr<dist::Communicator> owned;  // the NCCL communicator of a launched job
  std::string source;                         // "in-process", "torchrun", "slurm", "mpirun", "single"
  bool lead() const { return rank == 0; }     // writes the log, metrics, checkpoints and weights
};

/// How many processes the run has: `given`'s ranks, else the launched job's (1 when not launched).
int process_world(dist::Communicator* given);

/// The process group of a run: `given` (tests: ranks as threads), else NCCL across the processes of a launched job
/// (device cuda:LOCAL_RANK; cpu is refused), else one process on cfg.train.device.
ProcessGroup join_process_group(const io::Config& cfg, dist::Communicator* given);

/// The console logger of ranks other than 0: warnings and errors, prefixed with the rank.
std::shared_ptr<spdlog::logger> make_rank_logger(int rank);

/// DataParallel over `opt` (which must use flat buffers) with the model's and the EMA's tensors broadcast from
/// rank 0; null for a single process. Call after the optimizer state is loaded.
std::unique_ptr<dist::DataParallel> make_data_parallel(const io::Config& cfg, optim::Optimizer& opt,
                                                       const ProcessGroup& group, const nn::Module& model,
                                                       const nn::Module* ema_model);

}  // namespace vt::engine
