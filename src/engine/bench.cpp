// The benchmark loop. Synthetic batch made once on the host and copied to the device once; each step is the
// trainer's step (autocast forward + loss, zero_grad, backward, AdamW) with nothing read back, so the timed
// region queues work freely and synchronize() at its two ends is the only wait.
#include "engine/bench.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "autograd/node.h"
#include "io/json.h"
#include "models/registry.h"
#include "nn/autocast.h"
#include "ops/ops.h"
#include "optim/adamw.h"
#include "optim/param_groups.h"

extern "C" void openblas_set_num_threads(int);

namespace vt::engine {

namespace {

using Clock = std::chrono::steady_clock;

// Runs fn() `warmup` times, then `steps` times between two device synchronizations; returns the seconds.
template <typename Fn>
double timed(Device device, int64_t warmup, int64_t steps, Fn&& fn) {
  for (int64_t i = 0; i < warmup; ++i) fn();
  synchronize(device);
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < steps; ++i) fn();
  synchronize(device);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_gib(const std::optional<PeakMemory>& m) {
  return m ? json_number(static_cast<double>(m->allocated) / (1024.0 * 1024.0 * 1024.0)) : "null";
}

}  // namespace

BenchResult run_bench(const BenchOptions& opt) {
  VT_CHECK(opt.batch_size > 0 && opt.steps > 0 && opt.warmup >= 0, "[bench] need batch size > 0, steps > 0 and "
           "warmup >= 0, got ", opt.batch_size, ", ", opt.steps, ", ", opt.warmup);
  if (opt.threads > 0) {
    omp_set_num_threads(opt.threads);
    openblas_set_num_threads(opt.threads);
  }
  BenchResult r;
  const Device device = resolve_device(opt.device);
  r.device = device.str();
  r.amp = opt.amp && device.is_cuda();
  const std::optional<DType> amp = opt.amp ? std::optional<DType>(DType::bf16) : std::nullopt;

  models::ViTConfig cfg = models::preset(opt.model);
  cfg.attention = opt.attention;
  models::VisionTransformer model(cfg);
  r.params = model.num_parameters();
  model.to(device);

  const int64_t B = opt.batch_size;
  Tensor images = Tensor::empty({B, cfg.in_chans, cfg.img_size, cfg.img_size});  // [B, C, H, W]
  Generator gen(0);
  ops::normal_(images, 0, 1, gen);
  std::vector<double> label_values(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) label_values[static_cast<size_t>(i)] = static_cast<double>(i % cfg.num_classes);
  images = images.to(device);
  const Tensor labels = Tensor::from_vector(label_values, {B}, DType::i64).to(device);

  {
    release_cached_memory(device);
    reset_peak_memory(device);
    optim::AdamW adamw(optim::make_param_groups(model.named_parameters(), 0.05), 1e-3);
    model.train();
    Tensor loss;
    const double seconds = timed(device, opt.warmup, opt.steps, [&] {
      {
        nn::AutocastGuard autocast(amp);
        loss = ops::cross_entropy(model.forward(images), labels, opt.smoothing);
      }
      adamw.zero_grad();
      loss.backward();
      adamw.step();
    });
    r.train_step_ms = 1e3 * seconds / static_cast<double>(opt.steps);
    r.train_img_per_s = static_cast<double>(B * opt.steps) / seconds;
    r.train_peak = peak_memory(device);
    r.last_loss = loss.item();
    adamw.zero_grad();  // drops the gradients before inference is measured
  }

  if (opt.infer) {
    release_cached_memory(device);
    reset_peak_memory(device);
    model.eval();
    NoGradGuard no_grad;
    nn::AutocastGuard autocast(amp);
    Tensor logits;
    const double seconds = timed(device, opt.warmup, opt.steps, [&] { logits = model.forward(images); });
    r.has_infer = true;
    r.infer_batch_ms = 1e3 * seconds / static_cast<double>(opt.steps);
    r.infer_img_per_s = static_cast<double>(B * opt.steps) / seconds;
    r.infer_peak = peak_memory(device);
  }
  return r;
}

std::string bench_json(const BenchOptions& opt, const BenchResult& r) {
  std::string s = "{\"impl\":\"vitrain\"";
  auto add = [&s](const char* key, const std::string& json_value) { s += std::string(",\"") + key + "\":" + json_value; };
  add("model", io::json_quote(opt.model));
  add("attention", io::json_quote(opt.attention.type));
  add("batch_size", std::to_string(opt.batch_size));
  add("steps", std::to_string(opt.steps));
  add("warmup", std::to_string(opt.warmup));
  add("amp", r.amp ? "true" : "false");
  add("device", io::json_quote(r.device));
  add("params", std::to_string(r.params));
  add("train_img_per_s", json_number(r.train_img_per_s));
  add("train_step_ms", json_number(r.train_step_ms));
  add("train_peak_mem_gib", json_gib(r.train_peak));
  add("infer_img_per_s", r.has_infer ? json_number(r.infer_img_per_s) : "null");
  add("infer_batch_ms", r.has_infer ? json_number(r.infer_batch_ms) : "null");
  add("infer_peak_mem_gib", r.has_infer ? json_gib(r.infer_peak) : "null");
  add("last_loss", json_number(r.last_loss));
  return s + "}";
}

}  // namespace vt::engine
