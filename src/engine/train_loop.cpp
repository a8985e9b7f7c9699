// The training loop of every task (see the header).
#include "engine/train_loop.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <memory>

#include "core/rng.h"
#include "dist/data_parallel.h"
#include "engine/checkpoint.h"
#include "engine/ema.h"
#include "engine/process_group.h"
#include "engine/recipe.h"
#include "engine/run_stop.h"
#include "io/safetensors.h"
#include "nn/module.h"
#include "ops/elementwise.h"
#include "optim/optimizer.h"

namespace vt::engine {

RunSummary train_loop(const io::Config& cfg, const TrainHooks& hooks,
                      const std::function<TrainTask&(const RunStart&)>& make_task) {
  check_supported(cfg);
  const std::optional<DType> amp = amp_dtype(cfg);
  const StopSignals stop_signals;  // from here on SIGINT/SIGTERM/SIGUSR1 end the run at the next update
  RunStart run = start_run(cfg, hooks.communicator, amp);
  const RunFiles& files = run.files;
  const std::string& resume_path = run.resume_path;
  RunSummary summary = run.summary();
  if (run.finished(cfg, summary)) return summary;
  const ProcessGroup& group = run.group;
  const int world = group.world;
  const bool lead = group.lead();
  dist::Communicator* comm = group.comm;
  const Device device = group.device;
  const auto log = run.log;

  // The task builds its data and models on the host, so every device starts equal; they move after loading.
  TrainTask& task = make_task(run);
  nn::Module& model = task.model();
  nn::Module* ema_model = task.ema_model();
  VT_ASSERT((ema_model != nullptr) == cfg.train.model_ema);
  const uint64_t data_seed = static_cast<uint64_t>(cfg.train.seed);
  CheckpointState state;
  state.data_seed = data_seed;
  state.rng_seed = static_cast<uint64_t>(cfg.train.seed) + 1;  // dropout / drop-path stream
  Checkpoint resumed = std::move(run.resumed);                 // start_run loaded it
  if (!resume_path.empty()) {
    auto load_resumed_weights = [&](nn::Module& m, const io::NamedTensors& tensors) {  // strict, naming the file
      try {
        m.load_state_dict(tensors);
      } catch (const Error& e) {
        VT_FAIL("[resume] '", resume_path, "': ", e.what());
      }
    };
    VT_CHECK(resumed.state.data_seed == data_seed, "[resume] '", resume_path, "' was written with train.seed ",
             resumed.state.data_seed, ", this run has ", data_seed, ": the data order would differ");
    load_resumed_weights(model, resumed.model);
    if (ema_model) {
      VT_CHECK(!resumed.ema.empty(), "[resume] '", resume_path, "' holds no EMA weights but train.model_ema is on");
      load_resumed_weights(*ema_model, resumed.ema);
    }
    state = resumed.state;
    log->info("resuming from {}: epoch {}, update {} of the epoch, {} updates done", resume_path,
              state.position.epoch + 1, state.position.step_in_epoch, state.position.global_step);
  } else {
    if (!cfg.train.resume.empty())
      log->info("--resume auto: no checkpoint in {}, starting from scratch", cfg.train.output);
    task.load_initial_weights();
  }
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
  const std::unique_ptr<dist::DataParallel> dp = make_data_parallel(cfg, *opt, group, model, ema_model);
  // The EMA of the parameters rides in the optimizer's update launch where it can (flat, not ZeRO-1-ranged).
  if (ema) ema->fuse_into(*opt, model);

  const int64_t accum = cfg.train.grad_accum_steps;
  const int64_t batches_per_epoch = task.batches_per_epoch();
  const int64_t updates_per_epoch = batches_per_epoch / accum;
  VT_CHECK(updates_per_epoch >= 1, "[train] one epoch has ", batches_per_epoch,
           " batches, fewer than train.grad_accum_steps = ", accum);
  const int64_t total = updates_per_epoch * cfg.train.epochs;
  const LrPlan lr_plan(cfg, updates_per_epoch, world);
  log->info("{}; {} updates, {} ({} schedule)", describe_batch_and_lr(cfg, world), total, cfg.optim.opt,
            cfg.schedule.sched);
  std::optional<RunRecord> metrics;  // metrics.jsonl, summary.csv, TensorBoard
  if (lead) metrics.emplace(summary.metrics_path, !resume_path.empty());

  // train.cuda_graph: the update replayed from a CUDA graph after two eager ones (engine/train_step.h).
  const bool use_graph = cfg.train.cuda_graph && device.is_cuda();
  if (cfg.train.cuda_graph && !device.is_cuda()) log->warn("train.cuda_graph is ignored on the CPU");
  VT_CHECK(!use_graph || (world == 1 && accum == 1),
           "[train] train.cuda_graph needs one process and "
           "train.grad_accum_steps = 1, got ",
           world, " processes and ", accum, " accumulation steps");
  double data_wait = 0;  // seconds spent waiting for batches in this progress window
  // A one-rank job's data parallelism changes nothing: a captured update leaves it out.
  TrainStep step(
      device, use_graph,
      {model, *opt, use_graph ? nullptr : dp.get(), ema ? &*ema : nullptr, amp, cfg.optim.clip_grad, accum},
      [&] {
        const auto t_data = RunClock::now();
        TaskBatch b = task.next_batch();
        data_wait += seconds_since(t_data);
        return b;
      },
      [&](const TaskBatch& b) { return task.loss(b); });

  // The losses since the last check, summed on the device (NaN/Inf propagate), read only where the run
  // synchronises anyway (progress lines, checkpoints): a non-finite sum stops it before a checkpoint holds it.
  Tensor unchecked_losses;
  int64_t unchecked_from = state.position.global_step + 1;
  auto require_finite_losses = [&] {
    if (!unchecked_losses.defined()) return;
    const double v = unchecked_losses.item();
    VT_CHECK(std::isfinite(v), "[train] non-finite loss (", v, ") in updates ", unchecked_from, "..",
             state.position.global_step,
             ": stopping; the last checkpoint was written before it (lower optim.lr "
             "or set optim.clip_grad)");
    unchecked_losses = Tensor();
    unchecked_from = state.position.global_step + 1;
  };
  StopPoll stopper(cfg, group, hooks.stop_signal);
  // With ZeRO-1 every rank comes here: the whole optimizer state is gathered first (a collective), then released.
  auto checkpoint = [&](const std::string& path) {
    require_finite_losses();
    if (dp) dp->gather_state();
    if (lead) {
      Checkpoint c;
      c.model = host_state_dict(model);
      if (ema) c.ema = host_state_dict(ema->shadow());
      for (auto& [k, t] : opt->state()) c.optimizer.emplace_back(k, t.to(cpu()));
      c.state = state;
      c.state.rng_seed = default_generator().seed();
      c.state.rng_offset = default_generator().offset();
      c.state.config_yaml = run.config_yaml;
      save_checkpoint(path, c);
    }
    if (dp) dp->release_state();
    stopper.checkpoint_written();
  };

  const std::string recovery_path = files.path("recovery.safetensors");
  TrainPosition& pos = state.position;
  auto record = [&](RunSummary& s) -> RunSummary& {  // where the run is, for its summary
    s.steps = pos.global_step;
    s.best_metric = state.best_metric;
    s.best_epoch = state.best_epoch;
    return s;
  };
  const auto t_start = RunClock::now();
  double train_time = 0;
  int64_t images_seen = 0;
  while (pos.epoch < cfg.train.epochs) {
    const int64_t epoch = pos.epoch;
    model.train();
    task.begin_epoch(epoch, pos.step_in_epoch * accum);
    const auto t_epoch = RunClock::now();
    Tensor loss_window;  // sum of the window's losses, kept on the device: read only for a progress line
    int64_t window = 0, window_images = 0;
    data_wait = 0;
    auto t_window = RunClock::now();
    for (; pos.step_in_epoch < updates_per_epoch; ++pos.step_in_epoch) {
      // Between updates (every rank polls, so all act at the same update): a signal or train.max_steps stops the
      // run, train.recovery_minutes writes a recovery checkpoint.
      const StopPoll::Verdict stop = stopper.poll();
      const bool at_max_steps = cfg.train.max_steps > 0 && pos.global_step >= cfg.train.max_steps;
      if (stop.signal != 0 || at_max_steps || stop.recovery_due) checkpoint(recovery_path);
      if (stop.signal != 0 || at_max_steps) {
        if (stop.signal == 0)
          log->info("train.max_steps = {} reached: stopping; resume with --resume auto", cfg.train.max_steps);
        else
          log->info(
              "{} received: stopped in epoch {}/{} after update {}/{} of the epoch ({} updates done); "
              "recovery checkpoint {}; resume with --resume auto",
              signal_name(stop.signal), epoch + 1, cfg.train.epochs, pos.step_in_epoch, updates_per_epoch,
              pos.global_step, recovery_path);
        summary.stopped_at_max_steps = stop.signal == 0;
        summary.stop_signal = stop.signal;
        return record(summary);
      }
      if (stop.recovery_due)
        log->info("recovery checkpoint ({} min since the last checkpoint): {}, {} updates done",
                  cfg.train.recovery_minutes, recovery_path, pos.global_step);
      opt->lr = lr_plan.lr(pos.global_step, epoch);
      const TrainStep::Result update = step.run();
      ++pos.global_step;
      unchecked_losses = unchecked_losses.defined() ? unchecked_losses + update.loss : update.loss;
      loss_window = loss_window.defined() ? loss_window + update.loss : update.loss;
      ++window;
      window_images += update.items;
      images_seen += update.items;
      if (hooks.on_update) hooks.on_update(pos.global_step, update.loss.item());
      const int64_t s = pos.step_in_epoch;
      if ((s + 1) % cfg.train.log_interval == 0 || s + 1 == updates_per_epoch) {
        double loss_sum = loss_window.item();  // the step's one host sync
        if (comm && world > 1) loss_sum = dist::sum_over_ranks(*comm, {loss_sum}, device)[0] / world;  // all samples
        const double loss_mean = loss_sum / static_cast<double>(window);
        require_finite_losses();
        const double dt = seconds_since(t_window);
        const double ips = static_cast<double>(window_images) * world / dt;  // all ranks together
        const double eta =
            static_cast<double>(total - pos.global_step) * static_cast<double>(global_batch(cfg, world)) / ips;
        const std::optional<int64_t> bad = task.bad_files();
        log->info("{} data {:.0f}%{}",
                  io::progress_line(static_cast<int>(epoch + 1), cfg.train.epochs, s + 1, updates_per_epoch, loss_mean,
                                    opt->lr, ips, eta),
                  100.0 * data_wait / dt, bad && *bad > 0 ? " bad files " + std::to_string(*bad) : std::string());
        std::vector<std::pair<std::string, double>> fields{{"epoch", static_cast<double>(epoch + 1)},
                                                           {"step", static_cast<double>(pos.global_step)},
                                                           {"train_loss", loss_mean},
                                                           {"lr", opt->lr},
                                                           {"img_per_s", ips},
                                                           {"data_wait", data_wait / dt}};
        if (bad) fields.emplace_back("bad_files", static_cast<double>(*bad));
        if (metrics) metrics->log(fields);
        loss_window = Tensor();
        window = window_images = 0;
        data_wait = 0;
        t_window = RunClock::now();
      }
      if (cfg.train.recovery_interval > 0 && pos.global_step % cfg.train.recovery_interval == 0) {
        const TrainPosition current = pos;  // the loop's increment has not run yet: the next update is s + 1
        ++pos.step_in_epoch;
        checkpoint(recovery_path);
        pos = current;
      }
    }
    train_time += seconds_since(t_epoch);
    task.end_epoch(epoch);
    pos.epoch = epoch + 1;
    pos.step_in_epoch = 0;
    const bool last_epoch = pos.epoch == cfg.train.epochs;
    if (pos.epoch % cfg.eval.interval == 0 || last_epoch) {
      model.eval();
      const TaskEvaluation e = task.evaluate();
      const bool improved = state.best_epoch < 0 || task.better(e.value, state.best_metric);
      if (improved) {
        state.best_metric = e.value;
        state.best_epoch = pos.epoch;
      }
      log->info("epoch {}/{}: {}; {} (epoch {})", pos.epoch, cfg.train.epochs, e.line,
                task.best_text(state.best_metric), state.best_epoch);
      std::vector<std::pair<std::string, double>> row = {
          {"epoch", static_cast<double>(pos.epoch)}, {"step", static_cast<double>(pos.global_step)}, {"lr", opt->lr}};
      row.insert(row.end(), e.scores.begin(), e.scores.end());
      row.emplace_back("elapsed_s", seconds_since(t_start));
      row.insert(row.end(), e.ema_scores.begin(), e.ema_scores.end());
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
  record(summary);
  summary.train_seconds = train_time;
  summary.train_img_per_s = train_time > 0 ? static_cast<double>(images_seen) * world / train_time : 0;
  if (lead) io::save_safetensors(summary.weights_path, host_state_dict(model), weights_metadata(cfg));
  log->info("training: {:.1f} s, {:.1f} img/s; total {:.1f} s", train_time, summary.train_img_per_s,
            seconds_since(t_start));
  return summary;
}

}  // namespace vt::engine
