// The benchmark loop. Synthetic batch made once on the host and copied to the device once; each step is the
// training loop's update (engine/train_step.h) with nothing read back, so the timed region queues work freely and
// synchronize() at its two ends is the only wait.
#include "engine/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include <nlohmann/json.hpp>

#include "autograd/node.h"
#include "engine/graph_step.h"
#include "engine/process_group.h"
#include "engine/run_support.h"
#include "engine/train_step.h"
#include "models/mita_attention.h"
#include "models/registry.h"
#include "nn/autocast.h"
#include "ops/ops.h"
#include "optim/adamw.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"

namespace vt::engine {

namespace {

using Clock = std::chrono::steady_clock;

// --cuda-graph: eager steps before the capture (lazy state, GEMM autotuning), all inside the warm-up.
constexpr int64_t kEagerSteps = TrainStep::kEagerSteps;

// Runs fn() `warmup` times, then `windows` windows of `steps` calls each with the device synchronized at both ends
// of every window; returns each window's seconds.
template <typename Fn>
std::vector<double> timed_windows(Device device, int64_t warmup, int64_t steps, int64_t windows, Fn&& fn) {
  for (int64_t i = 0; i < warmup; ++i) fn();
  std::vector<double> seconds;
  for (int64_t w = 0; w < windows; ++w) {
    synchronize(device);
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < steps; ++i) fn();
    synchronize(device);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return seconds;
}

// Items per second of each window (`items` per window).
std::vector<double> rates(double items, const std::vector<double>& seconds) {
  std::vector<double> r;
  for (double s : seconds) r.push_back(items / s);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A measured number with 6 significant digits (what a timing resolves); NaN/Inf → null.
nlohmann::ordered_json measured(double v) {
  if (!std::isfinite(v)) return nullptr;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

nlohmann::ordered_json measured_list(const std::vector<double>& v) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (double x : v) a.push_back(measured(x));
  return a;
}

nlohmann::ordered_json gib(const std::optional<PeakMemory>& m) {
  if (!m) return nullptr;
  return measured(static_cast<double>(m->allocated) / (1024.0 * 1024.0 * 1024.0));
}

// The benchmark a model reduces to: one training batch, its loss, and the output of one inference batch.
struct Workload {
  nn::Module& model;
  optim::Optimizer& optimizer;
  TaskBatch batch;
  std::function<Tensor(const TaskBatch&)> loss;
  std::function<Tensor()> infer;
};

// All-reduce of one f32 buffer of the model's size, alone: its time and nccl-tests' bus bandwidth
// (bytes / time · 2(n − 1)/n).
void measure_allreduce(dist::Communicator& comm, int64_t numel, Device device, BenchResult& r) {
  const Tensor buffer = Tensor::zeros({numel}, DType::f32, device);
  const int64_t reps = 20;
  const double seconds = timed_windows(device, 5, reps, 1, [&] { comm.all_reduce_sum(buffer); }).front();
  const double n = comm.world();
  r.allreduce_ms = 1e3 * seconds / reps;
  r.allreduce_busbw_gbps = static_cast<double>(numel) * 4 / (seconds / reps) * 2 * (n - 1) / n / 1e9;
}

// Times the training steps (opt.train), then (opt.infer) inference, with the peak memory of each phase. The one code path of
// both tasks: only the model, the loss and the optimizer differ.
void measure(const BenchOptions& opt, const ProcessGroup& group, std::optional<DType> amp, Workload w, BenchResult& r) {
  const Device device = group.device;
  const int64_t B = opt.batch_size * group.world;
  io::Config dist_cfg;
  dist_cfg.dist.zero1 = opt.zero1;
  dist_cfg.dist.bucket_mb = opt.bucket_mb;
  const std::unique_ptr<dist::DataParallel> dp = make_data_parallel(dist_cfg, w.optimizer, group, w.model, nullptr);
  if (opt.train) {
    release_cached_memory(device);
    reset_peak_memory(device);
    w.model.train();
    VT_CHECK(!opt.cuda_graph || !dp, "[bench] --cuda-graph runs on one GPU (not under vitrain launch)");
    // The training loop's update (engine/train_step.h) on the one synthetic batch: no clip, no EMA.
    TrainStep step(
        device, opt.cuda_graph, {w.model, w.optimizer, dp.get(), nullptr, amp}, [&] { return w.batch; }, w.loss);
    TrainStep::Result last;
    r.train_runs = rates(static_cast<double>(B * opt.steps),
                         timed_windows(device, opt.warmup, opt.steps, opt.repeats, [&] { last = step.run(); }));
    r.has_train = true;
    r.graph_nodes = step.graph_nodes();
    r.train_img_per_s = median(r.train_runs);
    r.train_step_ms = 1e3 * static_cast<double>(B) / r.train_img_per_s;
    r.train_peak = peak_memory(device);
    r.last_loss = last.loss.item();
    w.optimizer.zero_grad();  // drops the gradients before inference is measured
  }
  if (group.comm) measure_allreduce(*group.comm, w.model.num_parameters(), device, r);

  if (opt.infer) {
    release_cached_memory(device);
    reset_peak_memory(device);
    w.model.eval();
    NoGradGuard no_grad;
    nn::AutocastGuard autocast(amp);
    Tensor out;
    // Drop the previous batch's output before the next forward, as a loop that discards it does (a replayed graph
    // writes into the same output every time).
    GraphStep step(device, opt.cuda_graph, kEagerSteps, nullptr, [&] {
      out = Tensor();
      out = w.infer();
    });
    r.infer_runs = rates(static_cast<double>(B * opt.steps),
                         timed_windows(device, opt.warmup, opt.steps, opt.repeats, [&] { step.run(); }));
    r.has_infer = true;
    r.infer_img_per_s = median(r.infer_runs);
    r.infer_batch_ms = 1e3 * static_cast<double>(B) / r.infer_img_per_s;
    r.infer_graph_nodes = step.graph_nodes();
    r.infer_peak = peak_memory(device);
  }
}

// Random normal images [B, C, S, S] on the device.
Tensor synthetic_images(int64_t B, int64_t C, int64_t S, Device device) {
  Tensor images = Tensor::empty({B, C, S, S});
  Generator gen(0);
  ops::normal_(images, 0, 1, gen);
  return images.to(device);
}

// Labels [B] (i64) cycling through the classes.
Tensor cycling_labels(int64_t B, int64_t classes, Device device) {
  std::vector<double> v(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i % classes);
  return Tensor::from_vector(v, {B}, DType::i64).to(device);
}

// A classifier (ViT or sequence model) with AdamW and smoothed cross-entropy on `inputs` and `labels`.
template <typename Model>
void measure_classifier(const BenchOptions& opt, const ProcessGroup& group, std::optional<DType> amp, Model& model,
                        const Tensor& inputs, const Tensor& labels, BenchResult& r) {
  optim::AdamW adamw(optim::make_param_groups(model.named_parameters(), 0.05), 1e-3);
  measure(opt, group, amp,
          {model,
           adamw,
           {inputs, labels},
           [&](const TaskBatch& b) { return ops::cross_entropy(model.forward(b.input), b.target, opt.smoothing); },
           [&] { return model.forward(inputs); }},
          r);
}

// Label maps [B, S, S] (i64) cycling through the classes, every 7th pixel 255 (ignored), as ADE20K's unlabelled
// pixels after reduce_zero_label.
Tensor synthetic_label_maps(int64_t B, int64_t S, int64_t classes, Device device) {
  std::vector<double> v(static_cast<size_t>(B * S * S));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 7 == 3 ? 255.0 : static_cast<double>((i * 7919 / 13) % classes);
  return Tensor::from_vector(v, {B, S, S}, DType::i64).to(device);
}

}  // namespace

BenchResult run_bench(const BenchOptions& opt) {
  VT_CHECK(!opt.cuda_graph || opt.warmup > kEagerSteps, "[bench] --cuda-graph needs --warmup > ", kEagerSteps,
           " (eager steps and the capture are not timed), got ", opt.warmup);
  VT_CHECK(opt.batch_size > 0 && opt.steps > 0 && opt.warmup >= 0,
           "[bench] need batch size > 0, steps > 0 and "
           "warmup >= 0, got ",
           opt.batch_size, ", ", opt.steps, ", ", opt.warmup);
  VT_CHECK(opt.repeats >= 1, "[bench] --repeats must be at least 1, got ", opt.repeats);
  set_threads(opt.threads);
  BenchResult r;
  io::Config group_cfg;
  group_cfg.train.device = opt.device;
  const ProcessGroup group = join_process_group(group_cfg, nullptr);
  const Device device = group.device;
  r.world = group.world;
  r.lead = group.lead();
  r.device = device.str();
  r.amp = opt.amp && device.is_cuda();
  const std::optional<DType> amp = opt.amp ? std::optional<DType>(DType::bf16) : std::nullopt;
  const int64_t B = opt.batch_size;

  if (opt.segmenter) {
    models::Segmenter model(*opt.segmenter);
    r.params = model.num_parameters();
    model.to(device);
    const models::ViTConfig& b = opt.segmenter->backbone;
    const Tensor images = synthetic_images(B, b.in_chans, b.img_size, device);
    const Tensor labels = synthetic_label_maps(B, b.img_size, opt.segmenter->num_classes, device);
    // Spec §5: SGD, Nesterov momentum 0.9, lr 1e-3, no weight decay.
    optim::SGD sgd(optim::make_param_groups(model.named_parameters(), 0.0), 1e-3, 0.9, true);
    measure(opt, group, amp,
            {model,
             sgd,
             {images, labels},
             [&](const TaskBatch& b) { return ops::pixel_cross_entropy(model.forward(b.input), b.target); },
             [&] { return model.forward(images); }},
            r);
    return r;
  }

  if (opt.sequence_length > 0) {
    const int64_t N = opt.sequence_length;
    models::SequenceConfig cfg = opt.sequence;
    cfg.attention = opt.attention;
    if (cfg.attention.is_mita()) {
      cfg.attention.landmark_pool = "sequence";  // no CLS token and no patch grid: pool all N tokens 1-D
      const int64_t k = models::mita_options(cfg.attention, cfg.heads).k;
      VT_CHECK(cfg.attention.m <= N && k <= N, "[bench] --sequence ", N, " is shorter than MiTA's --m ",
               cfg.attention.m, " or --k ", k);
    }
    models::SequenceClassifier model(cfg, opt.sequence_classes);
    r.params = model.num_parameters();
    model.to(device);
    Tensor tokens = Tensor::empty({B, N, cfg.dim});  // random token features: the input is already embedded
    Generator gen(0);
    ops::normal_(tokens, 0, 1, gen);
    tokens = tokens.to(device);
    measure_classifier(opt, group, amp, model, tokens, cycling_labels(B, opt.sequence_classes, device), r);
    return r;
  }

  models::ViTConfig cfg = opt.vit ? *opt.vit : models::preset(opt.model);
  cfg.attention = opt.attention;
  models::VisionTransformer model(cfg);
  r.params = model.num_parameters();
  model.to(device);
  const Tensor images = synthetic_images(B, cfg.in_chans, cfg.img_size, device);
  measure_classifier(opt, group, amp, model, images, cycling_labels(B, cfg.num_classes, device), r);
  return r;
}

std::string bench_json(const BenchOptions& opt, const BenchResult& r) {
  nlohmann::ordered_json j;
  j["impl"] = "vitrain";
  const bool sequence = opt.sequence_length > 0;
  j["model"] = sequence ? "sequence" : opt.model;
  j["task"] = opt.segmenter ? "segmentation" : sequence ? "sequence" : "classification";
  j["attention"] = opt.attention.type;
  if (opt.attention.is_mita()) {
    j["m"] = opt.attention.m;
    j["k"] = models::mita_options(opt.attention, 1).k;
    j["dwc"] = opt.attention.dwc;
    j["gate"] = opt.attention.gate;
  }
  if (sequence) {
    j["seq_len"] = opt.sequence_length;
    j["dim"] = opt.sequence.dim;
    j["depth"] = opt.sequence.depth;
    j["heads"] = opt.sequence.heads;
    j["mlp_ratio"] = measured(opt.sequence.mlp_ratio);
  }
  j["batch_size"] = opt.batch_size;
  j["steps"] = opt.steps;
  j["warmup"] = opt.warmup;
  j["repeats"] = opt.repeats;
  j["amp"] = r.amp;
  j["device"] = r.device;
  j["params"] = r.params;
  j["gpus"] = r.world;
  if (r.world > 1) {
    j["dist"] = opt.zero1 ? "zero1" : "ddp";
    j["bucket_mb"] = measured(opt.bucket_mb);
    j["grad_allreduce_ms"] = measured(r.allreduce_ms);
    j["allreduce_busbw_gbps"] = measured(r.allreduce_busbw_gbps);
  }
  j["train_img_per_s"] = r.has_train ? measured(r.train_img_per_s) : nullptr;
  j["train_step_ms"] = r.has_train ? measured(r.train_step_ms) : nullptr;
  j["train_peak_mem_gib"] = r.has_train ? gib(r.train_peak) : nullptr;
  j["infer_img_per_s"] = r.has_infer ? measured(r.infer_img_per_s) : nullptr;
  j["infer_batch_ms"] = r.has_infer ? measured(r.infer_batch_ms) : nullptr;
  j["infer_peak_mem_gib"] = r.has_infer ? gib(r.infer_peak) : nullptr;
  j["train_runs"] = r.has_train ? measured_list(r.train_runs) : nullptr;
  j["infer_runs"] = r.has_infer ? measured_list(r.infer_runs) : nullptr;
  j["last_loss"] = r.has_train ? measured(r.last_loss) : nullptr;
  j["cuda_graph"] = opt.cuda_graph && (r.graph_nodes > 0 || r.infer_graph_nodes > 0);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace vt::engine
