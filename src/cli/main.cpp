// vitrain: the command line. `train` and `eval` read a YAML config (timm-style keys) with --set overrides;
// `bench` measures throughput on synthetic data; `plot` draws a run's curves; `data check` inspects datasets;
// `convert` adapts timm weights (pos-embed resize, head drop); `seg-eval` scores segmentation weights (`eval`
// with a model.decoder config forwards there).
// Every error surfaces here as one line and a non-zero exit code.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "cli/command_support.h"
#include "cli/bench_command.h"
#include "cli/convert_command.h"
#include "cli/data_command.h"
#include "cli/eval_output.h"
#include "cli/eval_sweep_command.h"
#include "cli/flops_command.h"
#include "cli/launch_command.h"
#include "cli/plot_command.h"
#include "cli/seg_command.h"
#include "cli/timm_flags.h"
#include "cli/viz_command.h"
#include "dist/launch_env.h"
#include "engine/imagenet_data.h"
#include "engine/pretrained_cfg.h"
#include "engine/process_group.h"
#include "engine/recipe.h"
#include "engine/run_dir.h"
#include "engine/run_stop.h"
#include "engine/seg_trainer.h"
#include "engine/sequence_task.h"
#include "engine/trainer.h"
#include "io/config.h"
#include "vitrain_version.h"

namespace {

// A training run that ended before its last epoch, or had nothing left to train: its line and exit code (128 +
// the signal that stopped it, 0 otherwise); nullopt for a run that trained to the end.
std::optional<int> early_end(const vt::engine::RunSummary& s) {
  const auto steps = static_cast<long long>(s.steps);
  if (s.already_finished) {
    std::printf("the run is already finished (%lld updates); nothing to train. weights: %s\n", steps,
                s.weights_path.c_str());
    return 0;
  }
  if (s.stop_signal != 0) {
    std::printf("stopped by %s after %lld updates; resume with --resume auto\n",
                vt::engine::signal_name(s.stop_signal).c_str(), steps);
    return 128 + s.stop_signal;
  }
  if (s.stopped_at_max_steps) {
    std::printf("stopped after %lld updates (train.max_steps); resume with --resume auto\n", steps);
    return 0;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vitrain: train and evaluate vision transformers (dense and MiTA attention)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("vitrain ") + VITRAIN_VERSION + " (commit " + VITRAIN_COMMIT + ")");

  vt::cli::RunOptions train_opts, eval_opts;
  vt::cli::TimmFlagOptions train_timm, eval_timm;
  auto* train = app.add_subcommand("train",
                                   "train a model (default: DeiT's ImageNet recipe) from a YAML config, "
                                   "timm's args.yaml or timm's train.py flags, evaluating after each epoch");
  vt::cli::add_run_options(*train, train_opts);
  vt::cli::add_timm_train_flags(*train, train_timm);

  auto* eval = app.add_subcommand("eval",
                                  "evaluate saved weights on the test split (also: validate, with timm "
                                  "validate.py's flags)");
  eval->alias("validate");
  vt::cli::add_run_options(*eval, eval_opts, {.weights = true});
  vt::cli::add_timm_validate_flags(*eval, eval_timm);
  bool print_config = false;
  train->add_flag("--print-config", print_config,
                  "print the global batch, the lr and the resolved config (for this "
                  "process's world size: under `vitrain launch -n N`, N) and exit without training");
  eval->add_flag("--print-config", print_config, "print the resolved config and exit without evaluating");
  vt::cli::EvalOutputOptions eval_out;
  vt::cli::add_eval_output_options(*eval, eval_out);
  bool eval_amp = false;
  eval->add_flag("--amp", eval_amp, "evaluate under bf16 autocast (timm validate.py --amp); default f32");

  vt::cli::BenchCommand bench_cmd;
  auto* bench = vt::cli::add_bench_command(app, bench_cmd);

  vt::cli::add_data_command(app);
  vt::cli::add_plot_command(app);
  vt::cli::add_convert_command(app);
  vt::cli::add_launch_command(app);
  vt::cli::add_flops_command(app);
  vt::cli::add_viz_command(app);
  vt::cli::add_seg_eval_command(app);
  vt::cli::add_eval_sweep_commands(app);
  std::vector<std::string> args = vt::cli::timm_short_flags_to_long(argc, argv);
  if (args.size() > 1 && args[1] == "train") {
    for (const auto& a : args) {
      if (a == "--") break;
      if (vt::io::is_unsupported_timm_flag(a)) {
        std::fprintf(stderr,
                     "error: %s is a flag of timm's train.py that vitrain train does not support (the flags "
                     "it maps are listed by vitrain train --help)\n",
                     a.c_str());
        return 2;
      }
    }
  }
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  CLI11_PARSE(app, static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
  try {
    if (*bench) {
      vt::cli::run_bench_command(bench_cmd);
      return 0;
    }
    const vt::cli::RunOptions& opts = *train ? train_opts : eval_opts;
    const std::string& weights = opts.weights;
    vt::io::Config cfg = vt::cli::load_command_config(opts.config, opts.sets, opts.device,
                                                      (*train ? train_timm : eval_timm).sourced_overrides());
    if (*train && print_config) {
      const int world = vt::engine::process_world(nullptr);
      const vt::io::Config resolved = vt::engine::resolve_for_world(cfg, world);
      std::printf("%s\n", vt::engine::describe_batch_and_lr(resolved, world).c_str());
      std::fflush(stdout);
      std::printf("%s", vt::io::to_yaml(resolved).c_str());
      return 0;
    }
    // timm's --experiment: a new run never overwrites an earlier one (DIR/NAME-1, -2, ...). Under `vitrain launch`
    // every rank must agree on the folder, so there the name is taken as given.
    if (const auto run = train_timm.experiment();
        *train && run && cfg.train.resume.empty() && !vt::dist::launch_env().distributed())
      cfg.train.output = vt::engine::pick_run_dir(run->first, run->second, false).string();
    if (*eval) vt::engine::apply_pretrained_cfg(cfg);
    if (*eval && !print_config) vt::engine::require_data_dir(cfg);
    if (*eval && print_config) {
      std::printf("weights: %s\n%s", weights.c_str(), vt::io::to_yaml(cfg).c_str());
      return 0;
    }                                           // a model.name tag's mean/std/crop/size/classes
    if (*train && cfg.data.dataset == "lra") {  // Long Range Arena sequences (engine/sequence_task.h)
      const auto s = vt::engine::train_sequence(cfg);
      if (const auto code = early_end(s)) return *code;
      std::printf("%s\n", vt::engine::sequence_train_report(s).c_str());
    } else if (*train && !cfg.model.decoder.type.empty()) {  // segmentation: Segmenter + decoder (engine/seg_trainer.h)
      const auto s = vt::engine::train_segmentation(cfg);
      if (const auto code = early_end(s)) return *code;
      std::printf("%s\n", vt::engine::seg_train_report(s).c_str());
    } else if (*train) {
      auto s = vt::engine::train(cfg);
      if (const auto code = early_end(s)) return *code;
      std::printf("test top-1 %.2f%%  top-5 %.2f%%  (%lld images)\n", s.test.top1, s.test.top5,
                  static_cast<long long>(s.test.count));
      std::printf("training speed %.0f img/s over %.1f s\n", s.train_img_per_s, s.train_seconds);
      std::printf("log: %s\nmetrics: %s\nweights: %s\n", s.log_path.c_str(), s.metrics_path.c_str(),
                  s.weights_path.c_str());
    } else if (*eval && cfg.data.dataset == "lra") {
      const auto r = vt::engine::evaluate_sequence_weights(cfg, weights, opts.weights_options(), eval_amp);
      std::printf("LRA %s test top-1 %.2f%%  loss %.4f  (%lld sequences)\n", cfg.data.lra_task.c_str(), r.top1, r.loss,
                  static_cast<long long>(r.count));
    } else if (*eval && !cfg.model.decoder.type.empty()) {  // segmentation config: seg-eval's protocol and table
      return vt::cli::run_seg_eval(cfg, weights, opts.weights_options(), eval_out.results_file, eval_out.json);
    } else if (*eval) {
      vt::engine::EvalOptions options;
      options.load = opts.weights_options();
      options.amp = eval_amp;
      auto r = vt::engine::evaluate_weights(cfg, weights, options);
      const int64_t img_size = vt::engine::vit_config(cfg).img_size;
      // validate.py's row: Fashion-MNIST is evaluated uncropped; ImageFolder with data.crop_pct, bicubic.
      const bool folder = vt::engine::uses_image_folder(cfg);
      vt::cli::print_eval_results(
          {cfg.model.name, r.top1, r.top5, r.loss, r.params, img_size, folder ? cfg.data.crop_pct : 1.0, "bicubic",
           r.count, r.img_per_s, eval_amp, r.bad_files},
          eval_out);
    }
  } catch (const std::exception& e) {
    vt::cli::print_error(e);
    return 1;
  }
  return 0;
}
