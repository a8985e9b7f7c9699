#include "engine/trainer.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <omp.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "autograd/node.h"
#include "data/idx.h"
#include "engine/device.h"
#include "io/metrics.h"
#include "io/safetensors.h"
#include "models/registry.h"
#include "nn/autocast.h"
#include "ops/ops.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"

extern "C" void openblas_set_num_threads(int);

namespace vt::engine {

namespace {

constexpr double kFashionMean = 0.2860, kFashionStd = 0.3530;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

data::ImageSet image_set(const data::IdxImages& images, const std::vector<uint8_t>& labels, int64_t limit) {
  int64_t n = limit > 0 ? std::min<int64_t>(limit, images.n) : images.n;
  return {n, images.rows, images.cols, images.pixels.data(), labels.data()};
}

std::unique_ptr<optim::Optimizer> make_optimizer(const io::Config& cfg, const models::VisionTransformer& model) {
  auto groups = optim::make_param_groups(model.named_parameters(), cfg.optim.weight_decay);
  if (cfg.optim.opt == "adamw")
    return std::make_unique<optim::AdamW>(groups, cfg.optim.lr, cfg.optim.opt_betas[0], cfg.optim.opt_betas[1],
                                          cfg.optim.opt_eps);
  if (cfg.optim.opt == "sgd" || cfg.optim.opt == "momentum" || cfg.optim.opt == "nesterov")
    return std::make_unique<optim::SGD>(groups, cfg.optim.lr, cfg.optim.momentum, cfg.optim.opt == "nesterov");
  VT_FAIL("[config] unknown optim.opt '", cfg.optim.opt, "' (known: adamw, sgd, momentum, nesterov)");
}

// `name` with its first dotted segment equal to `from` replaced by `to` ("a.qkv.weight" → "a.qkvg.weight"),
// or "" when no segment is `from`.
std::string replace_segment(const std::string& name, const std::string& from, const std::string& to) {
  for (size_t start = 0; start <= name.size();) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    if (end - start == from.size() && name.compare(start, from.size(), from) == 0)
      return name.substr(0, start) + to + name.substr(end);
    start = end + 1;
  }
  return "";
}

// The weights as host tensors, so they can be written wherever the model lives.
io::NamedTensors host_state_dict(const nn::Module& model) {
  io::NamedTensors out;
  for (const auto& [name, t] : model.state_dict()) out.emplace_back(name, t.detach().to(cpu()));
  return out;
}

std::string describe_device(Device device, std::optional<DType> amp, const std::string& spec) {
  if (device.is_cuda()) return device.str() + (amp ? " (bf16 autocast)" : " (f32)");
  return "cpu (" + std::to_string(omp_get_max_threads()) + " threads)" + (spec == "auto" ? " (auto: no GPU)" : "");
}

}  // namespace

std::optional<DType> amp_dtype(const io::Config& cfg) {
  if (!cfg.train.amp) return std::nullopt;
  return DType::bf16;  // config validation rejects every other train.amp_dtype
}

models::ViTConfig vit_config(const io::Config& cfg) {
  models::ViTConfig v = models::preset(cfg.model.name);
  const auto& m = cfg.model;
  if (m.img_size > 0) v.img_size = m.img_size;
  if (m.patch_size > 0) v.patch_size = m.patch_size;
  if (m.in_chans > 0) v.in_chans = m.in_chans;
  if (m.num_classes > 0) v.num_classes = m.num_classes;
  if (m.embed_dim > 0) v.embed_dim = m.embed_dim;
  if (m.depth > 0) v.depth = m.depth;
  if (m.num_heads > 0) v.num_heads = m.num_heads;
  v.mlp_ratio = m.mlp_ratio;
  v.drop_rate = m.drop_rate;
  v.drop_path_rate = m.drop_path_rate;
  v.layer_norm_eps = m.layer_norm_eps;
  v.attention = m.attention;
  v.seed = static_cast<uint64_t>(cfg.train.seed);
  return v;
}

EvalResult evaluate(const models::VisionTransformer& model, data::ImageBatches& batches, Device device,
                    std::optional<DType> amp) {
  NoGradGuard no_grad;
  EvalResult r;
  double loss_sum = 0;
  int64_t correct1 = 0, correct5 = 0;
  for (int64_t s = 0; s < batches.batches_per_epoch(); ++s) {
    data::Batch b = batches.get(0, s);
    Tensor logits;
    {
      nn::AutocastGuard autocast(amp);
      logits = model.forward(b.images.to(device));
    }
    logits = logits.to(DType::f32).to(cpu());  // [B, classes]: small; the metrics below read it on the host
    const int64_t B = logits.size(0), C = logits.size(1);
    loss_sum += ops::cross_entropy(logits, b.labels).item() * static_cast<double>(B);
    auto top = ops::topk(logits, std::min<int64_t>(5, C), 1).second;  // [B, k]
    const int64_t k = top.size(1);
    const int64_t* idx = top.data<int64_t>();
    const int64_t* lab = b.labels.data<int64_t>();
    for (int64_t i = 0; i < B; ++i) {
      correct1 += idx[i * k] == lab[i];
      for (int64_t j = 0; j < k; ++j) correct5 += idx[i * k + j] == lab[i];
    }
    r.count += B;
  }
  r.loss = loss_sum / static_cast<double>(r.count);
  r.top1 = 100.0 * static_cast<double>(correct1) / static_cast<double>(r.count);
  r.top5 = 100.0 * static_cast<double>(correct5) / static_cast<double>(r.count);
  return r;
}

TrainSummary train(const io::Config& cfg) {
  namespace fs = std::filesystem;
  fs::create_directories(cfg.train.output);
  TrainSummary summary;
  summary.log_path = (fs::path(cfg.train.output) / "train.log").string();
  summary.metrics_path = (fs::path(cfg.train.output) / "metrics.jsonl").string();
  summary.weights_path = (fs::path(cfg.train.output) / "model.safetensors").string();
  auto log = make_logger(summary.log_path);
  set_threads(cfg.train.threads);
  {
    std::ofstream resolved(fs::path(cfg.train.output) / "config.yaml");
    resolved << io::to_yaml(cfg);
  }
  const Device device = resolve_device(cfg.train.device);
  const std::optional<DType> amp = amp_dtype(cfg);
  summary.device = device.str();
  log->info("device: {}", describe_device(device, amp, cfg.train.device));

  VT_CHECK(cfg.data.dataset == "fashion_mnist", "[config] unknown data.dataset '", cfg.data.dataset,
           "' (known: fashion_mnist)");
  data::FashionMnist ds = data::load_fashion_mnist(cfg.data.data_dir);
  data::ImageBatches train_batches(image_set(ds.train_images, ds.train_labels, cfg.data.train_limit),
                                   cfg.train.batch_size, true, cfg.data.hflip, kFashionMean, kFashionStd,
                                   static_cast<uint64_t>(cfg.train.seed));
  data::ImageBatches test_batches(image_set(ds.test_images, ds.test_labels, cfg.data.test_limit), cfg.eval.batch_size,
                                  false, 0.0, kFashionMean, kFashionStd, 0);

  models::VisionTransformer model(vit_config(cfg));  // initialised on the host, so every device starts equal
  log->info("model {} ({} attention): {} parameters", cfg.model.name, cfg.model.attention.type,
            model.num_parameters());
  model.to(device);  // parameters stay f32 (master weights)
  auto opt = make_optimizer(cfg, model);
  const int64_t steps_per_epoch = train_batches.batches_per_epoch(), total = steps_per_epoch * cfg.train.epochs;
  optim::LrSchedule sched(cfg.optim.lr, cfg.schedule.warmup_lr, cfg.schedule.min_lr,
                          static_cast<int64_t>(cfg.schedule.warmup_epochs * static_cast<double>(steps_per_epoch)),
                          total);
  io::MetricsLog metrics(summary.metrics_path);
  Generator dropout_gen(static_cast<uint64_t>(cfg.train.seed) + 1);

  const auto t_start = Clock::now();
  double train_time = 0;
  int64_t images_seen = 0, step = 0;
  for (int64_t epoch = 0; epoch < cfg.train.epochs; ++epoch) {
    model.train();
    const auto t_epoch = Clock::now();
    Tensor loss_window;  // sum of the window's losses, kept on the device: read only for a progress line
    int64_t window = 0, window_images = 0;
    auto t_window = Clock::now();
    for (int64_t s = 0; s < steps_per_epoch; ++s, ++step) {
      data::Batch b = train_batches.get(epoch, s);
      const Tensor images = b.images.to(device), labels = b.labels.to(device);
      opt->lr = sched.lr_at(step);
      Tensor loss;
      {
        nn::AutocastGuard autocast(amp);  // forward and loss only; backward follows the recorded dtypes
        loss = ops::cross_entropy(model.forward(images), labels, cfg.optim.smoothing);
      }
      opt->zero_grad();
      loss.backward();
      if (cfg.optim.clip_grad > 0) opt->clip_grad_norm(cfg.optim.clip_grad);
      opt->step();
      loss_window = loss_window.defined() ? loss_window + loss.detach() : loss.detach();
      ++window;
      window_images += images.size(0);
      images_seen += images.size(0);
      if ((s + 1) % cfg.train.log_interval == 0 || s + 1 == steps_per_epoch) {
        const double loss_mean = loss_window.item() / static_cast<double>(window);  // the step's one host sync
        VT_CHECK(std::isfinite(loss_mean), "[train] mean loss is ", loss_mean, " at epoch ", epoch + 1,
                 " steps ", s + 2 - window, "..", s + 1, ": stopping (lower optim.lr or enable optim.clip_grad)");
        const double dt = seconds_since(t_window);
        const double ips = static_cast<double>(window_images) / dt;
        const double eta = static_cast<double>(total - step - 1) * static_cast<double>(cfg.train.batch_size) / ips;
        log->info(io::progress_line(epoch + 1, cfg.train.epochs, s + 1, steps_per_epoch, loss_mean, opt->lr, ips,
                                    eta));
        metrics.log({{"epoch", static_cast<double>(epoch + 1)}, {"step", static_cast<double>(step + 1)},
                     {"train_loss", loss_mean}, {"lr", opt->lr}, {"img_per_s", ips}});
        loss_window = Tensor();
        window = window_images = 0;
        t_window = Clock::now();
      }
    }
    train_time += seconds_since(t_epoch);
    model.eval();
    summary.test = evaluate(model, test_batches, device, amp);
    log->info("epoch {}/{}: test top-1 {:.2f}% top-5 {:.2f}% loss {:.4f} ({} images)", epoch + 1, cfg.train.epochs,
              summary.test.top1, summary.test.top5, summary.test.loss, summary.test.count);
    metrics.log({{"epoch", static_cast<double>(epoch + 1)}, {"test_top1", summary.test.top1},
                 {"test_top5", summary.test.top5}, {"test_loss", summary.test.loss},
                 {"elapsed_s", seconds_since(t_start)}});
  }
  summary.train_seconds = train_time;
  summary.train_img_per_s = static_cast<double>(images_seen) / train_time;
  io::save_safetensors(summary.weights_path, host_state_dict(model),
                       {{"model", cfg.model.name}, {"attention", cfg.model.attention.type}});
  log->info("training: {:.1f} s, {:.0f} img/s; total {:.1f} s", train_time, summary.train_img_per_s,
            seconds_since(t_start));
  return summary;
}

WeightLoadReport load_weights_compatible(nn::Module& model, const io::NamedTensors& weights) {
  std::map<std::string, Tensor> given(weights.begin(), weights.end());
  std::set<std::string> used;
  WeightLoadReport report;
  io::NamedTensors matched;
  for (const auto& [name, dst] : model.state_dict()) {
    if (auto it = given.find(name); it != given.end()) {
      matched.emplace_back(name, it->second);
      used.insert(name);
      continue;
    }
    // A gated MiTA's qkvg rows are [q; k; v; g]: the first 3C rows are exactly a qkv projection.
    const std::string from_gate = replace_segment(name, "qkv", "qkvg");
    if (auto it = given.find(from_gate); !from_gate.empty() && it != given.end() && it->second.dim() >= 1 &&
                                         dst.dim() >= 1 && it->second.size(0) * 3 == dst.size(0) * 4) {
      matched.emplace_back(name, it->second.slice(0, 0, dst.size(0)));
      used.insert(from_gate);
      report.adapted.push_back(name + " <- " + from_gate + "[:" + std::to_string(dst.size(0)) + "]");
      continue;
    }
    const std::string to_gate = replace_segment(name, "qkvg", "qkv");
    VT_CHECK(to_gate.empty() || !given.count(to_gate), "[load] the weights have no tensor '", name,
             "': they come from an ungated model ('", to_gate, "' has no g rows), this model has a gate");
    VT_FAIL("[load] the weights have no tensor '", name, "', which this model needs");
  }
  for (const auto& [name, t] : given)
    if (!used.count(name)) report.ignored.push_back(name);
  model.load_state_dict(matched, true);  // checks the shapes, naming the tensor
  return report;
}

EvalResult evaluate_weights(const io::Config& cfg, const std::string& weights_path) {
  set_threads(cfg.train.threads);
  const Device device = resolve_device(cfg.train.device);
  models::VisionTransformer model(vit_config(cfg));
  const WeightLoadReport loaded = load_weights_compatible(model, io::load_safetensors(weights_path));
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!loaded.adapted.empty())
    spdlog::info("{}: {} tensor(s) taken from the gate projection: {}", weights_path, loaded.adapted.size(),
                 joined(loaded.adapted));
  if (!loaded.ignored.empty())
    spdlog::warn("{}: ignoring {} tensor(s) that a {} attention model has no use for: {}", weights_path,
                 loaded.ignored.size(), cfg.model.attention.type, joined(loaded.ignored));
  model.to(device);
  model.eval();
  VT_CHECK(cfg.data.dataset == "fashion_mnist", "[config] unknown data.dataset '", cfg.data.dataset, "'");
  data::FashionMnist ds = data::load_fashion_mnist(cfg.data.data_dir);
  data::ImageBatches test_batches(image_set(ds.test_images, ds.test_labels, cfg.data.test_limit), cfg.eval.batch_size,
                                  false, 0.0, kFashionMean, kFashionStd, 0);
  return evaluate(model, test_batches, device, amp_dtype(cfg));
}

}  // namespace vt::engine
