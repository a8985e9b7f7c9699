#include "engine/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "autograd/node.h"
#include "data/idx.h"
#include "dist/data_parallel.h"
#include "engine/checkpoint.h"
#include "engine/device.h"
#include "engine/ema.h"
#include "engine/graph_step.h"
#include "engine/pretrained_cfg.h"
#include "engine/process_group.h"
#include "engine/imagenet_data.h"
#include "engine/recipe.h"
#include "engine/run_stop.h"
#include "engine/run_support.h"
#include "engine/timm_weights.h"
#include "io/metrics.h"
#include "io/safetensors.h"
#include "models/registry.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::engine {

namespace {

using Clock = RunClock;

constexpr double kFashionMean = 0.2860, kFashionStd = 0.3530;

data::ImageSet image_set(const data::IdxImages& images, const std::vector<uint8_t>& labels, int64_t limit) {
  int64_t n = limit > 0 ? std::min<int64_t>(limit, images.n) : images.n;
  return {n, images.rows, images.cols, images.pixels.data(), labels.data()};
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

}  // namespace

std::optional<DType> amp_dtype(const io::Config& cfg) {
  if (!cfg.train.amp) return std::nullopt;
  return DType::bf16;  // config validation rejects every other train.amp_dtype
}

models::ViTConfig vit_config(const io::Config& cfg) {
  find_pretrained_cfg(cfg.model.name);  // an unknown pretrained tag is an error
  return models::vit_config(cfg.model, static_cast<uint64_t>(cfg.train.seed));
}

namespace {

// Top-1/top-5/loss over the batches that `for_each_batch` hands to its callback.
// With `comm`, each rank passes its share of the batches and the sums are added over the ranks (exact totals).
EvalResult evaluate_batches(const models::VisionTransformer& model,
                            const std::function<void(const std::function<void(const data::Batch&)>&)>& for_each_batch,
                            Device device, std::optional<DType> amp, dist::Communicator* comm = nullptr) {
  NoGradGuard no_grad;
  EvalResult r;
  double loss_sum = 0;
  int64_t correct1 = 0, correct5 = 0;
  for_each_batch([&](const data::Batch& b) {
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
  });
  if (comm && comm->world() > 1) {
    const std::vector<double> t = dist::sum_over_ranks(
        *comm, {loss_sum, static_cast<double>(correct1), static_cast<double>(correct5), static_cast<double>(r.count)},
        device);
    loss_sum = t[0];
    correct1 = static_cast<int64_t>(t[1]);
    correct5 = static_cast<int64_t>(t[2]);
    r.count = static_cast<int64_t>(t[3]);
  }
  r.loss = loss_sum / static_cast<double>(r.count);
  r.top1 = 100.0 * static_cast<double>(correct1) / static_cast<double>(r.count);
  r.top5 = 100.0 * static_cast<double>(correct5) / static_cast<double>(r.count);
  return r;
}

}  // namespace

EvalResult evaluate(const models::VisionTransformer& model, data::ImageBatches& batches, Device device,
                    std::optional<DType> amp) {
  return evaluate_batches(model, [&](const std::function<void(const data::Batch&)>& fn) {
    for (int64_t s = 0; s < batches.batches_per_epoch(); ++s) fn(batches.get(0, s));
  }, device, amp);
}

namespace {

bool higher_is_better(const std::string& metric) { return metric.find("top1") != std::string::npos; }

// The value of eval.best_metric among this evaluation's results.
double metric_value(const std::string& metric, const EvalResult& raw, const std::optional<EvalResult>& ema) {
  const bool use_ema = metric.rfind("ema_", 0) == 0;
  VT_CHECK(!use_ema || ema, "[train] eval.best_metric ", metric, " needs the EMA");
  const EvalResult& r = use_ema ? *ema : raw;
  return higher_is_better(metric) ? r.top1 : r.loss;
}

}  // namespace

TrainSummary train(const io::Config& given_cfg, const TrainHooks& hooks) {
  const io::Config cfg = resolve_for_world(given_cfg, process_world(hooks.communicator));  // the per-GPU batch
  check_supported(cfg);
  const bool resuming = !cfg.train.resume.empty();
  const std::optional<DType> amp = amp_dtype(cfg);
  const StopSignals stop_signals;  // from here on SIGINT/SIGTERM/SIGUSR1 end the run at the next update
  RunStart run = start_run(cfg, hooks.communicator, amp);
  const RunFiles& files = run.files;
  const std::string& resume_path = run.resume_path;
  TrainSummary summary;
  static_cast<RunSummary&>(summary) = run.summary();
  if (run.finished(cfg, summary)) return summary;
  const ProcessGroup& group = run.group;
  const int rank = group.rank, world = group.world;
  const bool lead = group.lead();
  dist::Communicator* comm = group.comm;
  const Device device = group.device;
  const auto log = run.log;
  const std::string& config_yaml = run.config_yaml;

  const uint64_t data_seed = static_cast<uint64_t>(cfg.train.seed);
  // Fashion-MNIST in memory, or an ImageFolder through the threaded loader (engine/imagenet_data.h).
  std::optional<data::FashionMnist> ds;
  std::optional<data::ImageBatches> train_batches, test_batches;
  std::optional<ImageNetData> imagenet;
  if (uses_image_folder(cfg)) {
    imagenet.emplace(cfg, vit_config(cfg).img_size, device, true, rank, world);
    VT_CHECK(imagenet->num_classes() <= vit_config(cfg).num_classes, "[data] ", cfg.data.data_dir, " has ",
             imagenet->num_classes(), " classes, more than model.num_classes = ", vit_config(cfg).num_classes);
  } else {
    ds = data::load_fashion_mnist(cfg.data.data_dir);
    // Data parallel: every rank builds the global batch of batch_size × world and trains on its rows (so the
    // ranks together see exactly the batches of one process with the global batch size).
    train_batches.emplace(image_set(ds->train_images, ds->train_labels, cfg.data.train_limit),
                          static_cast<int64_t>(cfg.train.batch_size) * world, true, cfg.data.hflip, kFashionMean,
                          kFashionStd, data_seed);
    test_batches.emplace(image_set(ds->test_images, ds->test_labels, cfg.data.test_limit), cfg.eval.batch_size, false,
                         0.0, kFashionMean, kFashionStd, 0);
  }
  const int64_t batches_per_epoch =
      imagenet ? imagenet->train_batches_per_epoch() : train_batches->batches_per_epoch();
  auto evaluate_on_test = [&](const models::VisionTransformer& m) {
    if (!imagenet)  // Fashion-MNIST: test batch s goes to rank s % world
      return evaluate_batches(m, [&](const auto& fn) {
        for (int64_t s = rank; s < test_batches->batches_per_epoch(); s += world) fn(test_batches->get(0, s));
      }, device, amp, comm);
    return evaluate_batches(m, [&](const auto& fn) { imagenet->for_each_eval_batch(fn); }, device, amp, comm);
  };

  // Models are built and loaded on the host, so every device starts equal; then moved (f32 master weights).
  models::VisionTransformer model(vit_config(cfg));
  std::unique_ptr<models::VisionTransformer> ema_model;
  if (cfg.train.model_ema) ema_model = std::make_unique<models::VisionTransformer>(vit_config(cfg));
  log->info("model {} ({} attention): {} parameters", cfg.model.name, cfg.model.attention.type,
            model.num_parameters());
  CheckpointState state;
  state.data_seed = data_seed;
  state.rng_seed = static_cast<uint64_t>(cfg.train.seed) + 1;  // dropout / drop-path stream
  Checkpoint resumed = std::move(run.resumed);  // start_run loaded it
  if (!resume_path.empty()) {
    VT_CHECK(resumed.state.data_seed == data_seed, "[resume] '", resume_path, "' was written with train.seed ",
             resumed.state.data_seed, ", this run has ", data_seed, ": the data order would differ");
    load_resumed_weights(model, resumed.model, resume_path);
    if (ema_model) {
      VT_CHECK(!resumed.ema.empty(), "[resume] '", resume_path, "' holds no EMA weights but train.model_ema is on");
      load_resumed_weights(*ema_model, resumed.ema, resume_path);
    }
    state = resumed.state;
    log->info("resuming from {}: epoch {}, update {} of the epoch, {} updates done", resume_path,
              state.position.epoch + 1, state.position.step_in_epoch, state.position.global_step);
  } else if (resuming) {
    log->info("--resume auto: no checkpoint in {}, starting from scratch", cfg.train.output);
  }
  if (resumed.model.empty() && !cfg.model.initial_checkpoint.empty())  // timm --initial-checkpoint (fine-tuning)
    load_timm_weights(model, read_model_weights(cfg.model.initial_checkpoint));
  default_generator().set_state(state.rng_seed, state.rng_offset);
  model.to(device);
  std::optional<ModelEma> ema;
  if (ema_model) {
    ema_model->to(device);
    // A fresh EMA starts as a copy of the model; a resumed one keeps the weights loaded from the checkpoint.
    ema.emplace(model, *ema_model, cfg.train.model_ema_decay, /*copy_model=*/resumed.ema.empty());
  }
  auto opt = make_optimizer(cfg, model);
  if (comm) opt->use_flat_buffers();  // buckets are ranges of the flat gradient buffer (already flat on CUDA)
  if (!resumed.optimizer.empty()) opt->load_state(resumed.optimizer);
  const std::unique_ptr<dist::DataParallel> dp = make_data_parallel(cfg, *opt, group, model, ema_model.get());
  // The EMA of the parameters rides in the optimizer's update launch where it can (flat, not ZeRO-1-ranged).
  if (ema) ema->fuse_into(*opt, model);

  const int64_t accum = cfg.train.grad_accum_steps;
  const int64_t updates_per_epoch = batches_per_epoch / accum;
  VT_CHECK(updates_per_epoch >= 1, "[train] one epoch has ", batches_per_epoch,
           " batches, fewer than train.grad_accum_steps = ", accum);
  const int64_t total = updates_per_epoch * cfg.train.epochs;
  const LrPlan lr_plan(cfg, updates_per_epoch, world);
  log->info("{}", describe_batch_and_lr(cfg, world));
  std::optional<io::MetricsLog> metrics;
  if (lead) metrics.emplace(summary.metrics_path, !resume_path.empty());

  // train.cuda_graph: the update (forward, loss, backward, clip, optimizer, EMA) on static input tensors, replayed
  // from a CUDA graph after two eager steps (engine/graph_step.h); the batch is copied into the inputs first.
  const bool use_graph = cfg.train.cuda_graph && device.is_cuda();
  if (cfg.train.cuda_graph && !device.is_cuda()) log->warn("train.cuda_graph is ignored on the CPU");
  VT_CHECK(!use_graph || (world == 1 && accum == 1), "[train] train.cuda_graph needs one process and "
           "train.grad_accum_steps = 1, got ", world, " processes and ", accum, " accumulation steps");
  Tensor graph_images, graph_labels, graph_loss;
  std::optional<GraphStep> graph_step;
  if (use_graph)
    graph_step.emplace(device, true, 2, [&] { opt->prepare_step(); }, [&] {
      opt->zero_grad();
      {
        nn::AutocastGuard autocast(amp);
        const Tensor logits = model.forward(graph_images);
        graph_loss = graph_labels.dtype() == DType::f32 ? ops::soft_target_cross_entropy(logits, graph_labels)
                                                        : ops::cross_entropy(logits, graph_labels, cfg.optim.smoothing);
      }
      graph_loss.backward();
      if (cfg.optim.clip_grad > 0) opt->clip_grad_norm(cfg.optim.clip_grad);
      opt->apply_step();
      if (ema) ema->update(model);
    });
  auto stage_graph_batch = [&](const Tensor& images, const Tensor& labels) {
    if (!graph_images.defined()) {
      graph_images = Tensor::empty(images.shape(), images.dtype(), device);
      graph_labels = Tensor::empty(labels.shape(), labels.dtype(), device);
    }
    VT_CHECK(images.shape() == graph_images.shape() && labels.shape() == graph_labels.shape() &&
                 labels.dtype() == graph_labels.dtype(),
             "[train] train.cuda_graph replays one batch shape: got images ", images.describe(), " and labels ",
             labels.describe(), " after ", graph_images.describe(), " and ", graph_labels.describe());
    graph_images.copy_(images);
    graph_labels.copy_(labels);
  };

  LossWatch losses(state.position.global_step + 1);
  StopPoll stopper(cfg, group, hooks.stop_signal);
  auto checkpoint = [&](const std::string& path) {
    losses.require_finite(state.position.global_step);
    write_run_checkpoint(path, model, ema ? &ema->shadow() : nullptr, *opt, dp.get(), state, config_yaml, lead);
    stopper.checkpoint_written();
  };

  const auto t_start = Clock::now();
  double train_time = 0;
  int64_t images_seen = 0;
  TrainPosition& pos = state.position;
  while (pos.epoch < cfg.train.epochs) {
    const int64_t epoch = pos.epoch;
    model.train();
    const auto t_epoch = Clock::now();
    Tensor loss_window;  // sum of the window's losses, kept on the device: read only for a progress line
    int64_t window = 0, window_images = 0;
    double data_wait = 0;
    auto t_window = Clock::now();
    for (; pos.step_in_epoch < updates_per_epoch; ++pos.step_in_epoch) {
      // Between updates: a signal or train.max_steps stops the run, train.recovery_minutes writes a checkpoint.
      if (stop_between_updates(stopper, *log, cfg, pos, updates_per_epoch, files, checkpoint, state, summary))
        return summary;
      opt->lr = lr_plan.lr(pos.global_step, epoch);
      Tensor update_loss;  // mean over the micro-batches of this update
      if (graph_step) {
        const auto t_data = Clock::now();
        const data::Batch b = imagenet ? imagenet->train_batch(epoch, pos.step_in_epoch)
                                       : train_batches->get(epoch, pos.step_in_epoch);
        stage_graph_batch(b.images.to(device), b.labels.to(device));
        data_wait += seconds_since(t_data);
        graph_step->run();
        update_loss = graph_loss.detach().clone();  // the next replay rewrites graph_loss
        window_images += graph_images.size(0);
        images_seen += graph_images.size(0);
      } else {
        opt->zero_grad();
        for (int64_t j = 0; j < accum; ++j) {
          const auto t_data = Clock::now();
          const int64_t index = pos.step_in_epoch * accum + j;
          data::Batch b = imagenet ? imagenet->train_batch(epoch, index) : train_batches->get(epoch, index);
          if (!imagenet && world > 1) {  // this rank's rows of the global Fashion-MNIST batch
            const int64_t B = cfg.train.batch_size;
            b.images = b.images.slice(0, rank * B, (rank + 1) * B);
            b.labels = b.labels.slice(0, rank * B, (rank + 1) * B);
          }
          const Tensor images = b.images.to(device), labels = b.labels.to(device);
          data_wait += seconds_since(t_data);
          Tensor loss;
          {
            nn::AutocastGuard autocast(amp);  // forward and loss only; backward follows the recorded dtypes
            const Tensor logits = model.forward(images);
            // Mixup/CutMix hand soft targets (smoothing folded in); plain labels use smoothed cross-entropy.
            loss = labels.dtype() == DType::f32 ? ops::soft_target_cross_entropy(logits, labels)
                                                : ops::cross_entropy(logits, labels, cfg.optim.smoothing);
          }
          if (accum > 1) loss = ops::mul(loss, 1.0 / static_cast<double>(accum));
          if (dp) dp->begin_backward(j + 1 == accum);  // only the last micro-batch communicates (no_sync)
          loss.backward();  // gradients of the micro-batches add up in .grad
          update_loss = update_loss.defined() ? update_loss + loss.detach() : loss.detach();
          window_images += images.size(0);
          images_seen += images.size(0);
        }
        if (dp) dp->finish_backward(cfg.optim.clip_grad > 0);  // averaged gradients (ZeRO-1: this rank's slice)
        if (cfg.optim.clip_grad > 0) opt->clip_grad_norm(cfg.optim.clip_grad);
        opt->step();
        if (dp) dp->after_step();
        if (ema) ema->update(model);
      }
      ++pos.global_step;
      losses.add(update_loss);
      loss_window = loss_window.defined() ? loss_window + update_loss : update_loss;
      ++window;
      if (hooks.on_update) hooks.on_update(pos.global_step, update_loss.item());
      const int64_t s = pos.step_in_epoch;
      if ((s + 1) % cfg.train.log_interval == 0 || s + 1 == updates_per_epoch) {
        double loss_sum = loss_window.item();  // the step's one host sync
        if (comm && world > 1) loss_sum = dist::sum_over_ranks(*comm, {loss_sum}, device)[0] / world;  // all samples
        const double loss_mean = loss_sum / static_cast<double>(window);
        losses.require_finite(pos.global_step);
        const double dt = seconds_since(t_window);
        const double ips = static_cast<double>(window_images) * world / dt;  // all ranks together
        const double eta =
            static_cast<double>(total - pos.global_step) * static_cast<double>(global_batch(cfg, world)) / ips;
        const int64_t bad = imagenet ? imagenet->bad_files() : 0;
        log->info("{} data {:.0f}%{}",
                  io::progress_line(static_cast<int>(epoch + 1), cfg.train.epochs, s + 1, updates_per_epoch,
                                    loss_mean, opt->lr, ips, eta),
                  100.0 * data_wait / dt, bad > 0 ? " bad files " + std::to_string(bad) : std::string());
        std::vector<std::pair<std::string, double>> fields{
            {"epoch", static_cast<double>(epoch + 1)}, {"step", static_cast<double>(pos.global_step)},
            {"train_loss", loss_mean}, {"lr", opt->lr}, {"img_per_s", ips}, {"data_wait", data_wait / dt}};
        if (imagenet) fields.emplace_back("bad_files", static_cast<double>(bad));
        if (metrics) metrics->log(fields);
        loss_window = Tensor();
        window = window_images = 0;
        data_wait = 0;
        t_window = Clock::now();
      }
      if (cfg.train.recovery_interval > 0 && pos.global_step % cfg.train.recovery_interval == 0) {
        const TrainPosition current = pos;  // the loop's increment has not run yet: the next update is s + 1
        ++pos.step_in_epoch;
        checkpoint(files.path("recovery.safetensors"));
        pos = current;
      }
    }
    train_time += seconds_since(t_epoch);
    pos.epoch = epoch + 1;
    pos.step_in_epoch = 0;
    const bool last_epoch = pos.epoch == cfg.train.epochs;
    if (pos.epoch % cfg.eval.interval == 0 || last_epoch) {
      model.eval();
      summary.test = evaluate_on_test(model);
      if (ema) summary.test_ema = evaluate_on_test(*ema_model);
      const double value = metric_value(cfg.eval.best_metric, summary.test, summary.test_ema);
      const bool improved = state.best_epoch < 0 || (higher_is_better(cfg.eval.best_metric)
                                                         ? value > state.best_metric
                                                         : value < state.best_metric);
      if (improved) {
        state.best_metric = value;
        state.best_epoch = pos.epoch;
      }
      log->info("epoch {}/{}: test top-1 {:.2f}% top-5 {:.2f}% loss {:.4f} ({} images){}; best {} {:.4f} (epoch {})",
                pos.epoch, cfg.train.epochs, summary.test.top1, summary.test.top5, summary.test.loss,
                summary.test.count,
                summary.test_ema ? fmt::format("; EMA top-1 {:.2f}% top-5 {:.2f}% loss {:.4f}", summary.test_ema->top1,
                                               summary.test_ema->top5, summary.test_ema->loss)
                                 : std::string(),
                cfg.eval.best_metric, state.best_metric, state.best_epoch);
      std::vector<std::pair<std::string, double>> row = {
          {"epoch", static_cast<double>(pos.epoch)}, {"step", static_cast<double>(pos.global_step)},
          {"lr", opt->lr},  {"test_top1", summary.test.top1}, {"test_top5", summary.test.top5},
          {"test_loss", summary.test.loss}, {"elapsed_s", seconds_since(t_start)}};
      if (summary.test_ema) {
        row.emplace_back("ema_top1", summary.test_ema->top1);
        row.emplace_back("ema_top5", summary.test_ema->top5);
        row.emplace_back("ema_loss", summary.test_ema->loss);
      }
      row.emplace_back("best_metric", state.best_metric);
      if (metrics) metrics->log(row);
      if (improved) checkpoint(files.path("best.safetensors"));
    }
    checkpoint(files.path("last.safetensors"));
    if (cfg.train.checkpoint_interval > 0 && pos.epoch % cfg.train.checkpoint_interval == 0) {
      checkpoint(files.epoch_path(pos.epoch));
      if (lead) files.prune_epoch_checkpoints(cfg.train.checkpoint_hist);
    }
  }
  summary.steps = pos.global_step;
  summary.best_metric = state.best_metric;
  summary.best_epoch = state.best_epoch;
  summary.train_seconds = train_time;
  summary.train_img_per_s = train_time > 0 ? static_cast<double>(images_seen) * world / train_time : 0;
  if (lead)
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

EvalResult evaluate_weights(const io::Config& cfg, const std::string& weights_path, const EvalOptions& options) {
  set_threads(cfg.train.threads);
  const Device device = resolve_device(cfg.train.device);
  models::VisionTransformer model(vit_config(cfg));
  load_vit_weights(model, weights_path, options.load);
  const std::optional<DType> amp = options.amp ? std::optional<DType>(DType::bf16) : std::nullopt;
  model.to(device);
  model.eval();
  EvalResult r;
  std::chrono::steady_clock::time_point start;
  if (uses_image_folder(cfg)) {  // val/ through the threaded loader with the eval transform (resize, center crop)
    ImageNetData val(cfg, static_cast<int>(vit_config(cfg).img_size), device, false);
    VT_CHECK(val.num_classes() <= vit_config(cfg).num_classes, "[data] ", cfg.data.data_dir, "/val has ",
             val.num_classes(), " class folders, more than the model's ", vit_config(cfg).num_classes, " classes");
    start = std::chrono::steady_clock::now();
    r = evaluate_batches(model, [&](const auto& fn) { val.for_each_eval_batch(fn); }, device, amp);
    r.bad_files = val.eval_bad_files();
  } else {
    VT_CHECK(cfg.data.dataset == "fashion_mnist", "[config] unknown data.dataset '", cfg.data.dataset, "'");
    data::FashionMnist ds = data::load_fashion_mnist(cfg.data.data_dir);
    data::ImageBatches test_batches(image_set(ds.test_images, ds.test_labels, cfg.data.test_limit),
                                    cfg.eval.batch_size, false, 0.0, kFashionMean, kFashionStd, 0);
    start = std::chrono::steady_clock::now();
    r = evaluate(model, test_batches, device, amp);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.img_per_s = seconds > 0 ? static_cast<double>(r.count) / seconds : 0.0;
  for (const auto& [name, p] : model.named_parameters()) r.params += p.numel();
  return r;
}

}  // namespace vt::engine
