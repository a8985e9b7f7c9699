// Shared run machinery of the training loops (see the header).
#include "engine/run_support.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <omp.h>

#include <algorithm>
#include <fstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "engine/resume.h"
#include "io/timm_args.h"
#include "optim/adamw.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"

extern "C" void openblas_set_num_threads(int);

namespace vt::engine {

double seconds_since(RunClock::time_point t0) { return std::chrono::duration<double>(RunClock::now() - t0).count(); }

void set_threads(int threads) {
  if (threads <= 0) return;
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

std::shared_ptr<spdlog::logger> make_logger(const std::string& log_path, bool truncate) {
  auto console = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_path, truncate);
  auto logger = std::make_shared<spdlog::logger>("vitrain", spdlog::sinks_init_list{console, file});
  logger->set_pattern("[%H:%M:%S] %v");
  logger->flush_on(spdlog::level::info);
  return logger;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const io::Config& cfg, const nn::Module& model) {
  auto groups = optim::make_param_groups(model.named_parameters(), cfg.optim.weight_decay);
  if (cfg.optim.opt == "adamw")
    return std::make_unique<optim::AdamW>(groups, cfg.optim.lr, cfg.optim.opt_betas[0], cfg.optim.opt_betas[1],
                                          cfg.optim.opt_eps);
  // timm's create_optimizer: "sgd" and "nesterov" are SGD with Nesterov momentum, "momentum" is plain momentum.
  if (cfg.optim.opt == "sgd" || cfg.optim.opt == "momentum" || cfg.optim.opt == "nesterov")
    return std::make_unique<optim::SGD>(groups, cfg.optim.lr, cfg.optim.momentum, cfg.optim.opt != "momentum");
  VT_FAIL("[config] unknown optim.opt '", cfg.optim.opt, "' (known: adamw, sgd, momentum, nesterov)");
}

io::NamedTensors host_state_dict(const nn::Module& model) {
  io::NamedTensors out;
  for (const auto& [name, t] : model.state_dict()) out.emplace_back(name, t.detach().to(cpu()));
  return out;
}

std::string describe_device(Device device, std::optional<DType> amp, const std::string& spec) {
  if (device.is_cuda()) return device.str() + (amp ? " (bf16 autocast)" : " (f32)");
  return "cpu (" + std::to_string(omp_get_max_threads()) + " threads)" + (spec == "auto" ? " (auto: no GPU)" : "");
}

void RunFiles::prune_epoch_checkpoints(int keep) const {
  std::vector<int64_t> epochs;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("checkpoint-", 0) != 0 || e.path().extension() != ".safetensors") continue;
    const std::string num = n.substr(11, n.size() - 11 - 12);
    if (!num.empty() && num.find_first_not_of("0123456789") == std::string::npos) epochs.push_back(std::stoll(num));
  }
  std::sort(epochs.rbegin(), epochs.rend());
  for (size_t i = static_cast<size_t>(keep); i < epochs.size(); ++i) std::filesystem::remove(epoch_path(epochs[i]));
}

RunSummary RunStart::summary() const {
  RunSummary s;
  s.log_path = files.path("train.log");
  s.metrics_path = files.path("metrics.jsonl");
  s.weights_path = files.path("model.safetensors");
  s.device = group.device.str();
  return s;
}

bool RunStart::finished(const io::Config& cfg, RunSummary& summary) const {
  if (resume_path.empty() || resumed.state.position.epoch < cfg.train.epochs) return false;
  const CheckpointState& s = resumed.state;
  summary.already_finished = true;
  summary.steps = s.position.global_step;
  summary.best_metric = s.best_metric;
  summary.best_epoch = s.best_epoch;
  log->info(
      "the run in {} is finished: {} holds epoch {} of train.epochs = {} ({} updates){}; nothing to "
      "train (raise train.epochs to train longer)",
      cfg.train.output, resume_path, s.position.epoch, cfg.train.epochs, s.position.global_step,
      s.best_epoch >= 0 ? fmt::format("; best {} {:.4f} (epoch {})", cfg.eval.best_metric, s.best_metric, s.best_epoch)
                        : std::string());
  if (group.lead() && !std::filesystem::exists(summary.weights_path)) {
    io::save_safetensors(summary.weights_path, resumed.model, weights_metadata(cfg));
    log->info("{} was missing (the run was killed before writing it): written from {}", summary.weights_path,
              resume_path);
  }
  return true;
}

std::map<std::string, std::string> weights_metadata(const io::Config& cfg) {
  std::map<std::string, std::string> m{{"model", cfg.model.name}, {"attention", cfg.model.attention.type}};
  if (!cfg.model.decoder.type.empty()) m["decoder"] = cfg.model.decoder.type;
  return m;
}

namespace {

// train.resume resolved and loaded: "auto" takes the newest checkpoint of the output folder that verifies.
void load_resume_checkpoint(const io::Config& cfg, RunStart& run) {
  if (run.resume_path != "auto") {
    if (!run.resume_path.empty()) run.resumed = load_checkpoint(run.resume_path);
    return;
  }
  ResumeChoice choice = choose_resume_checkpoint(cfg.train.output);
  for (const std::string& why : choice.skipped) run.log->warn("--resume auto: skipping {}", why);
  VT_CHECK(!choice.path.empty() || choice.skipped.empty(), "[resume] --resume auto: no checkpoint in ",
           cfg.train.output, " loads (", choice.skipped.size(),
           " damaged, named above); resume from a file with "
           "--resume PATH or move them away to start from scratch");
  if (!choice.path.empty() && !choice.skipped.empty())
    run.log->warn("--resume auto: taking {} ({} updates), the newest checkpoint that verifies", choice.path,
                  choice.checkpoint.state.position.global_step);
  run.resume_path = choice.path;
  run.resumed = std::move(choice.checkpoint);
}

}  // namespace

RunStart start_run(const io::Config& cfg, dist::Communicator* given, std::optional<DType> amp) {
  std::filesystem::create_directories(cfg.train.output);
  RunStart run{RunFiles{cfg.train.output}, cfg.train.resume, {}, {}, nullptr, io::to_yaml(cfg)};
  // Data parallel: the communicator a test hands in, or NCCL across the processes of a launched job.
  run.group = join_process_group(cfg, given);
  const ProcessGroup& g = run.group;
  run.log = g.lead() ? make_logger(run.files.path("train.log"), cfg.train.resume.empty()) : make_rank_logger(g.rank);
  load_resume_checkpoint(cfg, run);
  if (g.lead() && !run.resume_path.empty())
    if (const int dropped = rewind_metrics(run.summary().metrics_path, run.resumed.state))
      run.log->info("metrics.jsonl: dropped {} row{} past the checkpoint (they are logged again)", dropped,
                    dropped == 1 ? "" : "s");
  set_threads(cfg.train.threads);
  if (g.lead()) {
    std::ofstream resolved(run.files.dir / "config.yaml");
    resolved << run.config_yaml;
    std::ofstream timm_view(run.files.dir / "args.yaml");  // the same run in timm's keys (train -c args.yaml)
    timm_view << io::to_timm_args_yaml(cfg);
  }
  if (g.world > 1)
    run.log->info("data parallel: {} ranks ({}), gradient buckets of {} MB{}", g.world, g.source, cfg.dist.bucket_mb,
                  cfg.dist.zero1 ? ", ZeRO-1 optimizer sharding" : "");
  run.log->info("device: {}", describe_device(g.device, amp, cfg.train.device));
  return run;
}

}  // namespace vt::engine
