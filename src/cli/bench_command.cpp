#include "cli/bench_command.h"

#include <cstdio>
#include <fstream>

#include "cli/command_support.h"
#include "core/error.h"
#include "engine/process_group.h"
#include "engine/recipe.h"
#include "engine/trainer.h"
#include "models/mita_attention.h"

namespace vt::cli {

CLI::App* add_bench_command(CLI::App& app, BenchCommand& cmd) {
  auto& o = cmd.options;
  auto* b = app.add_subcommand("bench", "training (and inference) img/s and peak memory on synthetic data");
  b->alias("benchmark");
  b->add_option("-m,--model", o.model, "model preset")->capture_default_str();
  cmd.batch_size_option = b->add_option("-b,--batch-size", o.batch_size,
                                        "images per step (with --config: "
                                        "its per-GPU batch unless given)")
                              ->capture_default_str();
  b->add_option("--bench", cmd.bench,
                "train | inference | both (timm benchmark.py): what is timed; without it "
                "training, and inference too with --infer")
      ->check(CLI::IsMember({"train", "inference", "both"}))
      ->capture_default_str();
  b->add_option("--img-size", cmd.img_size, "input size (0: the model's)");
  b->add_option("-c,--config", cmd.config_path,
                "take the model from this YAML config; a segmentation config "
                "(model.decoder.type set) benchmarks its Segmenter: pixel cross-entropy, SGD, evaluation windows")
      ->check(CLI::ExistingFile);
  b->add_option("--set", cmd.sets, "override a key of --config (repeatable)");
  b->add_option("--steps", o.steps, "timed steps")->capture_default_str();
  b->add_option("--warmup", o.warmup, "untimed steps first")->capture_default_str();
  b->add_option("--repeats", o.repeats,
                "timed windows of --steps steps each after the warm-up (each is printed; "
                "the figure is their median)")
      ->capture_default_str();
  b->add_option("--sequence", o.sequence_length,
                "benchmark the sequence model at N tokens instead of --model: "
                "random token features [B, N, dim] -> pre-norm blocks -> mean pool -> linear head (10 classes), "
                "cross-entropy, AdamW; MiTA pools all N tokens 1-D");
  cmd.sequence_shape_options = {
      b->add_option("--dim", o.sequence.dim, "--sequence: token width")->capture_default_str(),
      b->add_option("--depth", o.sequence.depth, "--sequence: blocks")->capture_default_str(),
      b->add_option("--heads", o.sequence.heads, "--sequence: attention heads")->capture_default_str(),
      b->add_option("--mlp-ratio", o.sequence.mlp_ratio, "--sequence: MLP hidden width / dim")->capture_default_str()};
  b->add_option("--device", o.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  cmd.amp_option =
      b->add_flag("--amp", o.amp, "bf16 autocast on CUDA (timm --amp; with --config: train.amp unless given)");
  b->add_flag("--infer", o.infer, "also time inference (eval mode, no grad)");
  b->add_flag("--cuda-graph", o.cuda_graph,
              "capture each step in a CUDA graph after 2 eager warm-up steps and replay "
              "it (one GPU; like torch.compile mode=reduce-overhead)");
  b->add_option("--attention", o.attention.type,
                "dense | mita | mita_route | mita_compress | agent | agent_bias | linear | flatten | inline | mhla | "
                "pola | bra")
      ->capture_default_str();
  b->add_option("--m", o.attention.m, "MiTA landmarks")->capture_default_str();
  b->add_option("--k", o.attention.k, "MiTA keys per landmark (0: default)")->capture_default_str();
  b->add_option("--landmark-pool", o.attention.landmark_pool,
                "MiTA landmarks: shifted | patches | sequence | random (model.attention.landmark_pool; ViT-5 takes "
                "patches)")
      ->capture_default_str();
  b->add_option("--n-win", o.attention.n_win, "BRA regions per side of the patch map (model.attention.n_win)")
      ->capture_default_str();
  b->add_option("--topk", o.attention.topk, "BRA regions each region routes to (model.attention.topk)")
      ->capture_default_str();
  b->add_flag("--dwc", o.attention.dwc, "MiTA + DWC");
  b->add_flag("--gate", o.attention.gate, "MiTA + DWC + gate");
  b->add_option("--threads", o.threads, "CPU threads (0: all cores)")->capture_default_str();
  b->add_option("--json,--results-file", cmd.json_path, "append the JSON result line to this file");
  b->add_flag("--zero1", o.zero1, "under `vitrain launch`: ZeRO-1 instead of DDP (AdamW)");
  b->add_option("--bucket-mb", o.bucket_mb, "under `vitrain launch`: gradient bucket size in MiB")
      ->capture_default_str();
  return b;
}

namespace {

// The options with --config applied: the classifier or the Segmenter the config describes, and the
// config's batch size and autocast where the command line does not give them.
engine::BenchOptions options_with_config(const BenchCommand& cmd) {
  engine::BenchOptions o = cmd.options;
  for (const CLI::Option* opt : cmd.sequence_shape_options)
    VT_CHECK(o.sequence_length > 0 || opt->count() == 0, "[bench] ", opt->get_name(), " needs --sequence N");
  VT_CHECK(o.sequence_length >= 0, "[bench] --sequence must be a positive token count, got ", o.sequence_length);
  if (cmd.bench == "inference") o.train = false;
  if (cmd.bench != "train") o.infer = true;
  if (cmd.config_path.empty()) {
    VT_CHECK(cmd.sets.empty(), "[bench] --set needs --config");
    if (cmd.img_size > 0) {
      io::Config preset;
      preset.model.name = o.model;
      preset.model.img_size = cmd.img_size;
      o.vit = engine::vit_config(preset);
    }
    return o;
  }
  std::vector<std::string> sets = cmd.sets;
  if (cmd.img_size > 0) sets.insert(sets.begin(), "model.img_size=" + std::to_string(cmd.img_size));
  // The per-GPU batch of this run's processes (train.global_batch_size divided over them).
  const io::Config cfg =
      engine::resolve_for_world(load_command_config(cmd.config_path, sets), engine::process_world(nullptr));
  o.model = cfg.model.name;
  o.attention = cfg.model.attention;
  if (!cfg.model.decoder.type.empty()) {
    o.segmenter = models::segmenter_config(cfg.model, static_cast<uint64_t>(cfg.train.seed));
    o.infer = true;  // the evaluation windows are half of what a segmentation benchmark is for
  } else {
    o.vit = engine::vit_config(cfg);  // every model key of the config (img_size, depth, ...), not just the preset
  }
  if (!cmd.batch_size_option || cmd.batch_size_option->count() == 0) o.batch_size = cfg.train.batch_size;
  if (!cmd.amp_option || cmd.amp_option->count() == 0) o.amp = cfg.train.amp;
  return o;
}

// "; windows: 1,234.5 1,240.1 1,229.8 img/s" when more than one window was timed.
std::string window_list(const std::vector<double>& runs, const char* unit) {
  if (runs.size() < 2) return "";
  std::string s = "; windows:";
  char buf[32];
  for (double v : runs) {
    std::snprintf(buf, sizeof buf, " %.1f", v);
    s += buf;
  }
  return s + " " + unit;
}

}  // namespace

void run_bench_command(const BenchCommand& cmd) {
  const engine::BenchOptions o = options_with_config(cmd);
  VT_CHECK(o.sequence_length == 0 || cmd.config_path.empty(), "[bench] --sequence and --config exclude each other");
  o.attention.validate();
  engine::BenchResult r = engine::run_bench(o);
  if (!r.lead) return;  // a launched job reports once, from rank 0
  std::string model = o.model, what;
  if (o.segmenter)
    what = " + " + o.segmenter->decoder.type + " decoder, segmentation " +
           std::to_string(o.segmenter->backbone.img_size) + "px";
  if (o.sequence_length > 0) {
    char shape[160];
    std::snprintf(shape, sizeof shape, "sequence model N=%lld (dim %lld, depth %lld, %lld heads, MLP x%g)",
                  static_cast<long long>(o.sequence_length), static_cast<long long>(o.sequence.dim),
                  static_cast<long long>(o.sequence.depth), static_cast<long long>(o.sequence.heads),
                  o.sequence.mlp_ratio);
    model = shape;
  }
  if (o.attention.is_mita())
    what += ", m=" + std::to_string(o.attention.m) + " k=" + std::to_string(models::mita_options(o.attention, 1).k);
  std::printf("model %s%s (%s attention, %.1fM params), batch %lld, %s%s, %lld steps after %lld warm-up%s\n",
              model.c_str(), what.c_str(), o.attention.type.c_str(), static_cast<double>(r.params) / 1e6,
              static_cast<long long>(o.batch_size), r.device.c_str(), r.amp ? " bf16 autocast" : " f32",
              static_cast<long long>(o.steps), static_cast<long long>(o.warmup),
              o.repeats > 1 ? (", " + std::to_string(o.repeats) + " timed windows").c_str() : "");
  const char* unit = o.sequence_length > 0 ? "seq/s" : "img/s";
  if (r.has_train)
    std::printf("train: %.1f %s, %.2f ms/step, peak memory %s%s\n", r.train_img_per_s, unit, r.train_step_ms,
                engine::describe_peak_memory(r.train_peak).c_str(), window_list(r.train_runs, unit).c_str());
  if (r.graph_nodes > 0) std::printf("CUDA graph: the step replayed as one graph of %zu nodes\n", r.graph_nodes);
  if (r.world > 1)
    std::printf("data parallel: %d GPUs (%s, %lld per GPU); one gradient all-reduce alone %.2f ms, bus %.0f GB/s\n",
                r.world, o.zero1 ? "ZeRO-1" : "DDP", static_cast<long long>(o.batch_size), r.allreduce_ms,
                r.allreduce_busbw_gbps);
  if (r.has_infer)
    std::printf("%s: %.1f %s, %.2f ms/batch, peak memory %s%s\n", o.segmenter ? "eval windows" : "infer",
                r.infer_img_per_s, unit, r.infer_batch_ms, engine::describe_peak_memory(r.infer_peak).c_str(),
                window_list(r.infer_runs, unit).c_str());
  if (r.infer_graph_nodes > 0)
    std::printf("CUDA graph: the inference batch replayed as one graph of %zu nodes\n", r.infer_graph_nodes);
  const std::string line = engine::bench_json(o, r);
  std::printf("%s\n", line.c_str());
  if (!cmd.json_path.empty()) {
    std::ofstream f(cmd.json_path, std::ios::app);
    f << line << '\n';
    VT_CHECK(f.good(), "[bench] cannot write '", cmd.json_path, "'");
  }
}

}  // namespace vt::cli
