// Shared run machinery of the training loops (see the header).
#include "engine/run_support.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "optim/adamw.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"

extern "C" void openblas_set_num_threads(int);

namespace vt::engine {

double seconds_since(RunClock::time_point t0) {
  return std::chrono::duration<double>(RunClock::now() - t0).count();
}

void set_threads(int threads) {
  if (threads <= 0) return;
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

std::shared_ptr<spdlog::logger> make_logger(const std::string& log_path) {
  auto console = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_path, true);
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

}  // namespace vt::engine
