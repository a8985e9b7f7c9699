// Training-step throughput of a ViT on synthetic data (CPU): forward + backward + AdamW per step, img/s.
//   bench_train [--model vit_micro] [--batch 128] [--steps 30] [--warmup 5] [--threads 0]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <omp.h>

#include "models/registry.h"
#include "ops/ops.h"
#include "optim/adamw.h"
#include "optim/param_groups.h"

extern "C" void openblas_set_num_threads(int);

int main(int argc, char** argv) {
  CLI::App app{"training-step throughput on synthetic data"};
  std::string model_name = "vit_micro";
  int batch = 128, steps = 30, warmup = 5, threads = 0;
  vt::models::AttentionConfig attention;
  app.add_option("--model", model_name);
  app.add_option("--attention", attention.type, "dense | mita | mita_route | agent | agent_bias | linear");
  app.add_option("--m", attention.m, "MiTA landmarks");
  app.add_option("--k", attention.k, "MiTA keys per landmark (0: default)");
  app.add_flag("--dwc", attention.dwc, "MiTA + DWC");
  app.add_flag("--gate", attention.gate, "MiTA + DWC + gate");
  app.add_option("--batch", batch);
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--threads", threads);
  CLI11_PARSE(app, argc, argv);
  if (threads > 0) {
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
  }
  using namespace vt;
  models::ViTConfig cfg = models::preset(model_name);
  cfg.attention = attention;
  models::VisionTransformer model(cfg);
  optim::AdamW opt(optim::make_param_groups(model.named_parameters(), 0.05), 1e-3, 0.9, 0.999, 1e-8);
  Tensor x = Tensor::empty({batch, cfg.in_chans, cfg.img_size, cfg.img_size});
  ops::normal_(x, 0, 1);
  std::vector<double> labels(batch);
  for (int i = 0; i < batch; ++i) labels[i] = i % cfg.num_classes;
  Tensor y = Tensor::from_vector(labels, {batch}, DType::i64);
  double fwd = 0, bwd = 0, upd = 0;
  for (int s = 0; s < warmup + steps; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    Tensor loss = ops::cross_entropy(model.forward(x), y, 0.1);
    auto t1 = std::chrono::steady_clock::now();
    opt.zero_grad();
    loss.backward();
    auto t2 = std::chrono::steady_clock::now();
    opt.step();
    auto t3 = std::chrono::steady_clock::now();
    if (s >= warmup) {
      fwd += std::chrono::duration<double>(t1 - t0).count();
      bwd += std::chrono::duration<double>(t2 - t1).count();
      upd += std::chrono::duration<double>(t3 - t2).count();
    }
  }
  const double total = fwd + bwd + upd;
  std::printf(
      "model %s (%s) batch %d threads %d: %.1f img/s (per step: forward %.1f ms, backward %.1f ms, optimizer %.1f "
      "ms)\n",
      model_name.c_str(), attention.type.c_str(), batch, omp_get_max_threads(), batch * steps / total,
      1e3 * fwd / steps, 1e3 * bwd / steps, 1e3 * upd / steps);
  return 0;
}
