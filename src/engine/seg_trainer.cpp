// Segmentation training loop (see the header). The step structure, logging, metrics and checkpoints follow
// engine/trainer.cpp's train(); what differs is the model (Segmenter), the data (image + label map pairs) and the
// evaluation (sliding-window mIoU).
#include "engine/seg_trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "data/datasets.h"
#include "data/loader.h"
#include "data/samplers.h"
#include "data/sources.h"
#include "dist/communicator.h"
#include "dist/data_parallel.h"
#include "engine/checkpoint.h"
#include "engine/process_group.h"
#include "engine/recipe.h"
#include "engine/run_stop.h"
#include "engine/run_support.h"
#include "engine/timm_weights.h"
#include "io/metrics.h"
#include "models/segmenter.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::engine {

namespace {

constexpr int64_t kIgnoreIndex = 255;

// mmseg's train pipeline at the crop size, normalised with data.mean/std (empty: ImageNet's, as mmseg). The
// resize scale is (eval.seg_long_side, eval.seg_short_side): Segmenter's --im-size sets both the training scale
// and the evaluation's short side (512 → (2048, 512); ViT-L's 640 → (2560, 640)).
data::SegTrainConfig seg_train_config(const io::Config& cfg) {
  data::SegTrainConfig t;
  t.crop = static_cast<int>(models::segmenter_config(cfg.model, 0).backbone.img_size);
  t.scale_long = cfg.eval.seg_long_side;
  t.scale_short = cfg.eval.seg_short_side;
  t.flip = cfg.data.hflip;
  return t;
}

// data.mean/std, or ImageNet's (Normalization's default, as mmseg) when empty; the evaluation's come from the
// same keys (seg_eval_options).
data::Normalization seg_normalization(const io::Config& cfg) {
  data::Normalization n;
  for (size_t i = 0; i < cfg.data.mean.size(); ++i) n.mean[i] = static_cast<float>(cfg.data.mean[i]);
  for (size_t i = 0; i < cfg.data.std.size(); ++i) n.std[i] = static_cast<float>(cfg.data.std[i]);
  return n;
}

// The first data.train_limit pairs (0: all).
std::vector<data::SegmentationPair> limited(std::vector<data::SegmentationPair> pairs, int64_t limit) {
  if (limit > 0 && static_cast<size_t>(limit) < pairs.size()) pairs.resize(static_cast<size_t>(limit));
  return pairs;
}

void log_weight_report(spdlog::logger& log, const std::string& path, const WeightLoadReport& r) {
  log.info("backbone {}: loaded{}{}", path,
           r.adapted.empty() ? "" : fmt::format("; {} adapted: {}", r.adapted.size(), fmt::join(r.adapted, ", ")),
           r.ignored.empty() ? "" : fmt::format("; {} unused: {}", r.ignored.size(), fmt::join(r.ignored, ", ")));
}

}  // namespace

SegTrainSummary train_segmentation(const io::Config& given_cfg, const TrainHooks& hooks) {
  const io::Config cfg = resolve_for_world(given_cfg, process_world(hooks.communicator));  // the per-GPU batch
  VT_CHECK(!cfg.model.decoder.type.empty(), "[train] train_segmentation needs model.decoder.type (cbt | linear)");
  check_supported(cfg);
  const std::optional<DType> amp = amp_dtype(cfg);
  const StopSignals stop_signals;  // from here on SIGINT/SIGTERM/SIGUSR1 end the run at the next update
  RunStart run = start_run(cfg, hooks.communicator, amp);
  const RunFiles& files = run.files;
  const std::string& resume_path = run.resume_path;
  SegTrainSummary summary;
  static_cast<RunSummary&>(summary) = run.summary();
  if (run.finished(cfg, summary)) return summary;
  const ProcessGroup& group = run.group;
  const int rank = group.rank, world = group.world;
  const bool lead = group.lead();
  dist::Communicator* comm = group.comm;
  const Device device = group.device;
  const auto log = run.log;
  const std::string& config_yaml = run.config_yaml;

  // Data: ADE20K training pairs through the threaded loader (f32 images + i64 label maps, 255 = ignore). Data
  // parallel: each rank reads its shard of the epoch's shuffled order (DistributedSampler, padded; the same
  // order on every rank) and draws its own augmentations.
  const uint64_t data_seed = static_cast<uint64_t>(cfg.train.seed);
  const data::SegTrainConfig train_tf = seg_train_config(cfg);
  data::SegmentationSource train_source(limited(data::ade20k(cfg.data.data_dir, "training"), cfg.data.train_limit),
                                        train_tf, /*reduce_zero=*/true, seg_normalization(cfg));
  const std::vector<data::SegmentationPair> val_pairs = data::ade20k(cfg.data.data_dir, "validation");
  const int64_t n_train = train_source.size();
  data::LoaderOptions lo;
  lo.batch_size = cfg.train.batch_size;
  lo.threads = std::max(1, cfg.data.workers);
  lo.seed = data_seed;
  lo.stream = static_cast<uint64_t>(rank);
  lo.max_bad_files = cfg.data.max_bad_files;
  data::Loader::Sampler sampler = [n_train, data_seed](int64_t epoch) {
    return data::shuffled_order(n_train, data_seed, epoch);
  };
  if (world > 1) {
    data::DistributedSamplerOptions shard;
    shard.rank = rank;
    shard.world = world;
    shard.seed = data_seed;
    sampler = [n_train, shard](int64_t epoch) { return data::distributed_indices(n_train, shard, epoch); };
  }
  // The last partial batch is dropped; every rank's shard has the same length.
  const int64_t updates_per_epoch = static_cast<int64_t>(sampler(0).size()) / cfg.train.batch_size;
  VT_CHECK(updates_per_epoch >= 1, "[train] ", n_train, " training images make no batch of train.batch_size ",
           cfg.train.batch_size, world > 1 ? fmt::format(" on each of {} ranks", world) : std::string());
  data::Loader loader(train_source, sampler, lo);
  const SegEvalOptions eval_opt = seg_eval_options(cfg);  // data.test_limit limits the validation images
  log->info("ADE20K {}: {} training pairs ({} updates per epoch), {} validation images{}", cfg.data.data_dir,
            n_train, updates_per_epoch, val_pairs.size(),
            cfg.data.test_limit > 0 ? fmt::format(" (evaluating the first {})", cfg.data.test_limit) : "");

  // The model is built and loaded on the host, then moved (f32 master weights).
  models::Segmenter model(models::segmenter_config(cfg.model, static_cast<uint64_t>(cfg.train.seed)));
  log->info("model {} ({} attention) + {} decoder: {} parameters", cfg.model.name, cfg.model.attention.type,
            cfg.model.decoder.type, model.num_parameters());
  CheckpointState state;
  state.data_seed = data_seed;
  state.rng_seed = static_cast<uint64_t>(cfg.train.seed) + 1;  // drop-path stream
  Checkpoint resumed = std::move(run.resumed);  // start_run loaded it
  if (!resume_path.empty()) {
    VT_CHECK(resumed.state.data_seed == data_seed, "[resume] '", resume_path, "' was written with train.seed ",
             resumed.state.data_seed, ", this run has ", data_seed, ": the data order would differ");
    load_resumed_weights(model, resumed.model, resume_path);
    state = resumed.state;
    log->info("resuming from {}: epoch {}, update {} of the epoch, {} updates done", resume_path,
              state.position.epoch + 1, state.position.step_in_epoch, state.position.global_step);
  } else {
    if (!cfg.train.resume.empty())
      log->info("--resume auto: no checkpoint in {}, starting from scratch", cfg.train.output);
    if (!cfg.model.initial_checkpoint.empty())
      log_weight_report(*log, cfg.model.initial_checkpoint,
                        load_segmenter_backbone(model, cfg.model.initial_checkpoint));
  }
  default_generator().set_state(state.rng_seed, state.rng_offset);
  model.to(device);
  auto opt = make_optimizer(cfg, model);
  if (comm) opt->use_flat_buffers();  // buckets are ranges of the flat gradient buffer (already flat on CUDA)
  if (!resumed.optimizer.empty()) opt->load_state(resumed.optimizer);
  const std::unique_ptr<dist::DataParallel> dp = make_data_parallel(cfg, *opt, group, model, nullptr);
  const int64_t total = updates_per_epoch * cfg.train.epochs;
  const LrPlan lr_plan(cfg, updates_per_epoch, world);
  log->info("global batch {} = {} per GPU x {} process{}; {} updates; {} lr {:.3e} ({} schedule)",
            global_batch(cfg, world), cfg.train.batch_size, world, world > 1 ? "es" : "", total, cfg.optim.opt,
            resolved_lr(cfg, world), cfg.schedule.sched);
  std::optional<io::MetricsLog> metrics;
  if (lead) metrics.emplace(summary.metrics_path, !resume_path.empty());

  LossWatch losses(state.position.global_step + 1);
  StopPoll stopper(cfg, group, hooks.stop_signal);
  auto checkpoint = [&](const std::string& path) {
    losses.require_finite(state.position.global_step);
    write_run_checkpoint(path, model, nullptr, *opt, dp.get(), state, config_yaml, lead);
    stopper.checkpoint_written();
  };

  const auto t_start = RunClock::now();
  double train_time = 0;
  int64_t images_seen = 0;
  TrainPosition& pos = state.position;
  int64_t loader_epoch = -1;  // the epoch the loader is building
  while (pos.epoch < cfg.train.epochs) {
    const int64_t epoch = pos.epoch;
    model.train();
    data::Batch b;
    if (loader_epoch != epoch) {
      loader.start_epoch(epoch);
      loader_epoch = epoch;
      for (int64_t s = 0; s < pos.step_in_epoch; ++s)  // a resumed run starts mid-epoch: skip the batches done
        VT_CHECK(loader.next(b), "[data] epoch ", epoch, " has no batch ", s);
    }
    const auto t_epoch = RunClock::now();
    Tensor loss_window;  // sum of the window's losses, kept on the device: read only for a progress line
    int64_t window = 0, window_images = 0;
    double data_wait = 0;
    auto t_window = RunClock::now();
    for (; pos.step_in_epoch < updates_per_epoch; ++pos.step_in_epoch) {
      // Between updates: a signal or train.max_steps stops the run, train.recovery_minutes writes a checkpoint.
      if (stop_between_updates(stopper, *log, cfg, pos, updates_per_epoch, files, checkpoint, state, summary))
        return summary;
      opt->lr = lr_plan.lr(pos.global_step, epoch);
      opt->zero_grad();
      const auto t_data = RunClock::now();
      VT_CHECK(loader.next(b), "[data] epoch ", epoch, " has no batch ", pos.step_in_epoch);
      const Tensor images = b.images.to(device), labels = b.labels.to(device);
      data_wait += seconds_since(t_data);
      Tensor loss;
      {
        nn::AutocastGuard autocast(amp);  // forward and loss only; backward follows the recorded dtypes
        loss = ops::pixel_cross_entropy(model.forward(images), labels, kIgnoreIndex);
      }
      if (dp) dp->begin_backward(true);
      loss.backward();
      if (dp) dp->finish_backward(cfg.optim.clip_grad > 0);  // averaged gradients (ZeRO-1: this rank's slice)
      if (cfg.optim.clip_grad > 0) opt->clip_grad_norm(cfg.optim.clip_grad);
      opt->step();
      if (dp) dp->after_step();
      ++pos.global_step;
      const Tensor update_loss = loss.detach();
      losses.add(update_loss);
      loss_window = loss_window.defined() ? loss_window + update_loss : update_loss;
      ++window;
      window_images += images.size(0);
      images_seen += images.size(0);
      if (hooks.on_update) hooks.on_update(pos.global_step, update_loss.item());
      const int64_t s = pos.step_in_epoch;
      if ((s + 1) % cfg.train.log_interval == 0 || s + 1 == updates_per_epoch) {
        double loss_sum = loss_window.item();  // the step's one host sync
        if (comm && world > 1) loss_sum = dist::sum_over_ranks(*comm, {loss_sum}, device)[0] / world;  // all ranks
        const double loss_mean = loss_sum / static_cast<double>(window);
        losses.require_finite(pos.global_step);
        const double dt = seconds_since(t_window);
        const double ips = static_cast<double>(window_images) * world / dt;  // all ranks together
        const double eta =
            static_cast<double>(total - pos.global_step) * static_cast<double>(global_batch(cfg, world)) / ips;
        const int64_t bad = static_cast<int64_t>(loader.bad_files().size());
        log->info("{} data {:.0f}%{}",
                  io::progress_line(static_cast<int>(epoch + 1), cfg.train.epochs, s + 1, updates_per_epoch,
                                    loss_mean, opt->lr, ips, eta),
                  100.0 * data_wait / dt, bad > 0 ? " bad files " + std::to_string(bad) : std::string());
        if (metrics)
          metrics->log({{"epoch", static_cast<double>(epoch + 1)}, {"step", static_cast<double>(pos.global_step)},
                        {"train_loss", loss_mean}, {"lr", opt->lr}, {"img_per_s", ips},
                        {"data_wait", data_wait / dt}, {"bad_files", static_cast<double>(bad)}});
        loss_window = Tensor();
        window = window_images = 0;
        data_wait = 0;
        t_window = RunClock::now();
      }
      if (cfg.train.recovery_interval > 0 && pos.global_step % cfg.train.recovery_interval == 0) {
        const TrainPosition current = pos;  // the loop's increment has not run yet: the next update is s + 1
        ++pos.step_in_epoch;
        checkpoint(files.path("recovery.safetensors"));
        pos = current;
      }
    }
    train_time += seconds_since(t_epoch);
    if (epoch + 1 < cfg.train.epochs) {  // the next epoch's first batches are built during evaluation and checkpoints
      loader.start_epoch(epoch + 1);
      loader_epoch = epoch + 1;
    }
    pos.epoch = epoch + 1;
    pos.step_in_epoch = 0;
    const bool last_epoch = pos.epoch == cfg.train.epochs;
    if (pos.epoch % cfg.eval.interval == 0 || last_epoch) {
      model.eval();
      // One protocol for every evaluation: eval.seg_* (Segmenter's in-training eval used stride = crop). Data
      // parallel: each rank evaluates its share of the images; every rank gets the summed scores, so the best-
      // checkpoint decision (a collective) is the same on all.
      summary.test = evaluate_segmentation(model, val_pairs, eval_opt, device, comm);
      const double miou = summary.test.scores.miou;
      const bool improved = state.best_epoch < 0 || miou > state.best_metric;
      if (improved) {
        state.best_metric = miou;
        state.best_epoch = pos.epoch;
      }
      log->info("epoch {}/{}: {} ({} images, {:.1f} img/s); best mIoU {:.2f} (epoch {})", pos.epoch,
                cfg.train.epochs, seg_summary_line(summary.test.scores), summary.test.images,
                summary.test.img_per_s, state.best_metric, state.best_epoch);
      if (metrics)
        metrics->log({{"epoch", static_cast<double>(pos.epoch)}, {"step", static_cast<double>(pos.global_step)},
                      {"lr", opt->lr}, {"miou", miou}, {"macc", summary.test.scores.macc},
                      {"aacc", summary.test.scores.aacc}, {"eval_images", static_cast<double>(summary.test.images)},
                      {"eval_img_per_s", summary.test.img_per_s}, {"elapsed_s", seconds_since(t_start)},
                      {"best_metric", state.best_metric}});
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
                         {{"model", cfg.model.name}, {"attention", cfg.model.attention.type},
                          {"decoder", cfg.model.decoder.type}});
  log->info("training: {:.1f} s, {:.1f} img/s; total {:.1f} s", train_time, summary.train_img_per_s,
            seconds_since(t_start));
  return summary;
}

std::string seg_train_report(const SegTrainSummary& s) {
  return fmt::format("validation {} ({} images); best mIoU {:.2f} (epoch {})\ntraining speed {:.1f} img/s over "
                     "{:.1f} s\nlog: {}\nmetrics: {}\nweights: {}",
                     seg_summary_line(s.test.scores), s.test.images, s.best_metric, s.best_epoch,
                     s.train_img_per_s, s.train_seconds, s.log_path, s.metrics_path, s.weights_path);
}

}  // namespace vt::engine
