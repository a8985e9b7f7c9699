#include "cli/bench_command.h"

#include <cstdio>
#include <fstream>

#include "core/error.h"

namespace vt::cli {

CLI::App* add_bench_command(CLI::App& app, BenchCommand& cmd) {
  auto& o = cmd.options;
  auto* b = app.add_subcommand("bench", "training (and inference) img/s and peak memory on synthetic data");
  b->add_option("--model", o.model, "model preset")->capture_default_str();
  b->add_option("--batch-size", o.batch_size, "images per step")->capture_default_str();
  b->add_option("--steps", o.steps, "timed steps")->capture_default_str();
  b->add_option("--warmup", o.warmup, "untimed steps first")->capture_default_str();
  b->add_option("--device", o.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  b->add_flag("--amp", o.amp, "bf16 autocast on CUDA (timm --amp)");
  b->add_flag("--infer", o.infer, "also time inference (eval mode, no grad)");
  b->add_option("--attention", o.attention.type, "dense | mita | mita_route | mita_compress | agent | agent_bias | linear")
      ->capture_default_str();
  b->add_option("--m", o.attention.m, "MiTA landmarks")->capture_default_str();
  b->add_option("--k", o.attention.k, "MiTA keys per landmark (0: default)")->capture_default_str();
  b->add_flag("--dwc", o.attention.dwc, "MiTA + DWC");
  b->add_flag("--gate", o.attention.gate, "MiTA + DWC + gate");
  b->add_option("--threads", o.threads, "CPU threads (0: all cores)")->capture_default_str();
  b->add_option("--json", cmd.json_path, "append the JSON result line to this file");
  return b;
}

void run_bench_command(const BenchCommand& cmd) {
  const auto& o = cmd.options;
  cmd.options.attention.validate();
  engine::BenchResult r = engine::run_bench(o);
  std::printf("model %s (%s attention, %.1fM params), batch %lld, %s%s, %lld steps after %lld warm-up\n",
              o.model.c_str(), o.attention.type.c_str(), static_cast<double>(r.params) / 1e6,
              static_cast<long long>(o.batch_size), r.device.c_str(), r.amp ? " bf16 autocast" : " f32",
              static_cast<long long>(o.steps), static_cast<long long>(o.warmup));
  std::printf("train: %.1f img/s, %.2f ms/step, peak memory %s\n", r.train_img_per_s, r.train_step_ms,
              engine::describe_peak_memory(r.train_peak).c_str());
  if (r.has_infer)
    std::printf("infer: %.1f img/s, %.2f ms/batch, peak memory %s\n", r.infer_img_per_s, r.infer_batch_ms,
                engine::describe_peak_memory(r.infer_peak).c_str());
  const std::string line = engine::bench_json(o, r);
  std::printf("%s\n", line.c_str());
  if (!cmd.json_path.empty()) {
    std::ofstream f(cmd.json_path, std::ios::app);
    f << line << '\n';
    VT_CHECK(f.good(), "[bench] cannot write '", cmd.json_path, "'");
  }
}

}  // namespace vt::cli
