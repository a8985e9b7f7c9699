#include "engine/process_group.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "dist/launch_env.h"
#include "dist/nccl_communicator.h"
#include "engine/device.h"

namespace vt::engine {

int process_world(dist::Communicator* given) { return given ? given->world() : dist::launch_env().world; }

ProcessGroup join_process_group(const io::Config& cfg, dist::Communicator* given) {
  ProcessGroup g;
  if (given) {
    g.rank = given->rank();
    g.world = given->world();
    g.comm = given;
    g.source = "in-process";
    g.device = resolve_device(cfg.train.device);
    return g;
  }
  const dist::LaunchEnv env = dist::launch_env();
  g.rank = env.rank;
  g.world = env.world;
  g.source = env.launcher;
  if (!env.distributed()) {
    g.device = resolve_device(cfg.train.device);
    return g;
  }
  VT_CHECK(cfg.train.device != "cpu", "[dist] rank ", env.rank, ": a launched job of ", env.world,
           " processes trains on GPUs with NCCL, but train.device is cpu");
  g.device = resolve_device("cuda:" + std::to_string(env.local_rank));  // NCCL needs a GPU per process
  g.owned = std::make_unique<dist::NcclCommunicator>(env, g.device);
  g.comm = g.owned.get();
  return g;
}

std::shared_ptr<spdlog::logger> make_rank_logger(int rank) {
  auto logger = std::make_shared<spdlog::logger>("vitrain", std::make_shared<spdlog::sinks::stdout_color_sink_mt>());
  logger->set_pattern("[%H:%M:%S] [rank " + std::to_string(rank) + "] %v");
  logger->set_level(spdlog::level::warn);
  return logger;
}

std::unique_ptr<dist::DataParallel> make_data_parallel(const io::Config& cfg, optim::Optimizer& opt,
                                                       const ProcessGroup& group, const nn::Module& model,
                                                       const nn::Module* ema_model) {
  if (!group.comm) return nullptr;
  std::vector<Tensor> params, replicated;  // replicated: everything rank 0 sets for all
  for (const auto& [name, p] : model.named_parameters()) params.push_back(p);
  for (const auto& [name, t] : model.state_dict()) replicated.push_back(t);
  if (ema_model)
    for (const auto& [name, t] : ema_model->state_dict()) replicated.push_back(t);
  auto dp = std::make_unique<dist::DataParallel>(opt, *group.comm,
                                                 dist::DataParallelOptions{cfg.dist.bucket_mb, cfg.dist.zero1}, params);
  dp->broadcast_from_rank0(replicated);
  return dp;
}

}  // namespace vt::engine
