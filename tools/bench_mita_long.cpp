// The paper's Figure 5 benchmark: inference throughput of the 3-block sequence model (models/sequence_model.h)
// with dense attention (our flash kernel under bf16) and MiTA, for N from 1K to 1M tokens; with --layer, the
// attention layer alone (forward, and forward + backward) at C=128/H=2 and at the DeiT-S shape. One line per
// (kind, N, batch) on stdout and, with --csv, one CSV row in the columns scripts/bench_mita_long.py writes too.
// A failure at one N (out of memory, an unsupported option) becomes a row with the error; the run goes on.
// --repeats R times each measurement's window R times (ms_per_batch: the median, runs_ms: each).
//   bench_mita_long [--kinds dense,mita] [--ns 1024,...] [--batch-dense 64,...] [--batch-mita 64,...]
//                   [--iters 20] [--warmup 2] [--target-s 1] [--repeats 1] [--csv out.csv] [--layer]
//                   [--device cuda:0]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>

#include "autograd/node.h"
#include "engine/device.h"
#include "models/sequence_model.h"
#include "nn/autocast.h"
#include "ops/ops.h"
#ifdef VT_WITH_CUDA
#include "kernels/cuda/event.h"
#include "kernels/cuda/stream.h"
#endif

namespace {

using namespace vt;

struct Options {
  std::string device = "cuda:0", csv, impl = "fused";
  std::vector<std::string> kinds = {"dense", "mita"};
  std::vector<int64_t> ns = {1024, 4096, 16384, 65536, 262144, 1048576};
  std::vector<int64_t> batch_dense = {64, 16, 4, 1, 1, 1}, batch_mita = {64, 16, 8, 4, 2, 1};
  int64_t iters = 20, warmup = 2, layer_tokens = 262144, repeats = 1;
  double target_s = 1.0;
  bool deterministic = false, layer = false, no_deit = false;
};

struct Row {
  std::string mode, kind, shape;
  int64_t N = 0, batch = 0, m = 0, k = 0, iters = 0;
  double ms_per_batch = 0, peak_gib = 0;
  std::vector<double> runs_ms;  ///< each timed window's ms per call
  std::string error;
};

Row make_row(const std::string& mode, const std::string& kind, const std::string& shape, int64_t N, int64_t B,
             const models::AttentionConfig& attention) {
  Row r;
  r.mode = mode, r.kind = kind, r.shape = shape, r.N = N, r.batch = B;
  if (kind == "mita") r.m = attention.m, r.k = attention.k;
  return r;
}

const char* kCsvHeader =
    "impl,mode,kind,shape,N,batch,m,k,iters,ms_per_batch,samples_per_s,tokens_per_s,peak_mem_gib,error,backend,runs_ms";

std::string csv_safe(std::string s) {
  std::replace(s.begin(), s.end(), ',', ';');
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '"', '\'');
  return s.substr(0, 240);
}

class Report {
 public:
  explicit Report(const std::string& path) {
    if (path.empty()) return;
    csv_.open(path);
    VT_CHECK(csv_.good(), "[bench] cannot write '", path, "'");
    csv_ << kCsvHeader << '\n';
  }
  void add(const Row& r) {
    const double sps = r.error.empty() ? 1e3 * static_cast<double>(r.batch) / r.ms_per_batch : 0.0;
    const std::string mk = r.m > 0 ? "m=k=" + std::to_string(r.m) : "";
    if (r.error.empty())
      std::printf("%-13s %-5s %-6s N=%-8lld B=%-5lld %-8s %12.2f samples/s %10.3f ms/batch  peak %.2f GiB\n",
                  r.mode.c_str(), r.kind.c_str(), r.shape.c_str(), static_cast<long long>(r.N),
                  static_cast<long long>(r.batch), mk.c_str(), sps, r.ms_per_batch, r.peak_gib);
    else
      std::printf("%-13s %-5s %-6s N=%-8lld B=%-5lld FAILED: %s\n", r.mode.c_str(), r.kind.c_str(), r.shape.c_str(),
                  static_cast<long long>(r.N), static_cast<long long>(r.batch), r.error.c_str());
    std::fflush(stdout);
    if (!csv_.is_open()) return;
    char nums[256];
    std::snprintf(nums, sizeof nums, "%lld,%lld,%lld,%lld,%lld,%.6g,%.6g,%.6g,%.4f", static_cast<long long>(r.N),
                  static_cast<long long>(r.batch), static_cast<long long>(r.m), static_cast<long long>(r.k),
                  static_cast<long long>(r.iters), r.error.empty() ? r.ms_per_batch : 0.0, sps,
                  sps * static_cast<double>(r.N), r.peak_gib);
    std::string runs;
    for (double v : r.runs_ms) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.6g", runs.empty() ? "" : ";", v);
      runs += buf;
    }
    csv_ << "vitrain," << r.mode << ',' << r.kind << ',' << r.shape << ',' << nums << ',' << csv_safe(r.error) << ",,"
         << runs << '\n';
    csv_.flush();
  }

 private:
  std::ofstream csv_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double host_ms(const std::function<void()>& fn, Device dev) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  engine::synchronize(dev);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Warm-up (cut short once one call takes longer than target_s), then as many timed calls as fit in target_s
// (1..iters), between two CUDA events recorded after a synchronize, in o.repeats windows. Fills r.iters, r.runs_ms
// and r.ms_per_batch (the median window). A warm-up call slower than 4 × target_s (dense attention at 1M tokens) is
// a measurement itself (host clock around a synchronized call, iters 1), followed by repeats - 1 more such calls:
// repeating a call of many seconds within a window would not change the figure.
void time_calls(const Options& o, Device dev, const std::function<void()>& fn, Row& r) {
  engine::synchronize(dev);
  double last_ms = host_ms(fn, dev);  // the first call pays one-time set-up (allocations, algorithm choice)
  for (int64_t i = 0; i < std::max<int64_t>(1, o.warmup); ++i) {
    last_ms = host_ms(fn, dev);
    if (last_ms > 4e3 * o.target_s) {
      r.iters = 1;
      r.runs_ms = {last_ms};
      for (int64_t w = 1; w < o.repeats; ++w) r.runs_ms.push_back(host_ms(fn, dev));
      r.ms_per_batch = median(r.runs_ms);
      return;
    }
    if (last_ms > 1e3 * o.target_s) break;
  }
  r.iters = std::clamp<int64_t>(static_cast<int64_t>(1e3 * o.target_s / std::max(last_ms, 1e-3)), 1, o.iters);
  for (int64_t w = 0; w < o.repeats; ++w) {
    double total_ms = 0;
#ifdef VT_WITH_CUDA
    if (dev.is_cuda()) {
      kernels::cuda::CudaEvent start, stop;
      start.record(kernels::cuda::current_stream());
      for (int64_t i = 0; i < r.iters; ++i) fn();
      stop.record(kernels::cuda::current_stream());
      total_ms = stop.elapsed_ms_since(start);
    }
#endif
    if (!dev.is_cuda())
      total_ms = host_ms(
          [&] {
            for (int64_t i = 0; i < r.iters; ++i) fn();
          },
          dev);
    r.runs_ms.push_back(total_ms / static_cast<double>(r.iters));
  }
  r.ms_per_batch = median(r.runs_ms);
}

// Runs one measurement: `setup` builds the model and input and returns the call to time. Errors become the row's.
void measure(const Options& o, Device dev, Report& report, Row r, const std::function<std::function<void()>()>& setup) {
  try {
    engine::release_cached_memory(dev);
    std::function<void()> fn = setup();
    engine::reset_peak_memory(dev);
    time_calls(o, dev, fn, r);
    const auto peak = engine::peak_memory(dev);
    r.peak_gib = peak ? static_cast<double>(peak->allocated) / (1024.0 * 1024.0 * 1024.0) : 0.0;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  engine::release_cached_memory(dev);
  report.add(r);
}

Tensor random_input(const Shape& shape, Device dev) {
  Tensor x = Tensor::empty(shape, DType::f32, dev);
  Generator gen(1);
  ops::normal_(x, 0, 1, gen);
  return x;
}

std::optional<DType> amp_for(Device dev) { return dev.is_cuda() ? std::optional<DType>(DType::bf16) : std::nullopt; }

int64_t batch_at(const std::vector<int64_t>& list, size_t i) {
  VT_CHECK(!list.empty(), "[bench] empty batch list");
  return list[std::min(i, list.size() - 1)];
}

void run_model(const Options& o, Device dev, Report& report) {
  for (const auto& kind : o.kinds)
    for (size_t i = 0; i < o.ns.size(); ++i) {
      const int64_t N = o.ns[i], B = batch_at(kind == "mita" ? o.batch_mita : o.batch_dense, i);
      models::SequenceConfig cfg = models::figure5_config(kind, N, o.impl);
      cfg.attention.deterministic = o.deterministic;
      Row row = make_row("model_infer", kind, "C128H2", N, B, cfg.attention);
      std::shared_ptr<models::SequenceTransformer> model;
      Tensor x;
      measure(o, dev, report, row, [&]() -> std::function<void()> {
        model = std::make_shared<models::SequenceTransformer>(cfg);
        model->to(dev);
        model->eval();
        x = random_input({B, N, cfg.dim}, dev);  // [B, N, D]
        return [&] {
          NoGradGuard no_grad;
          nn::AutocastGuard autocast(amp_for(dev));
          model->forward(x);
        };
      });
    }
}

struct LayerShape {
  std::string name;
  int64_t C, H, N, B;
  models::AttentionConfig mita;
};

void run_layer(const Options& o, Device dev, Report& report, const LayerShape& s) {
  for (const auto& kind : o.kinds)
    for (const bool backward : {false, true}) {
      models::AttentionConfig cfg = kind == "mita" ? s.mita : models::AttentionConfig{};
      cfg.deterministic = o.deterministic;
      Row row = make_row(backward ? "layer_fwdbwd" : "layer_fwd", kind, s.name, s.N, s.B, cfg);
      std::shared_ptr<models::Attention> attn;
      Tensor x, grad;
      measure(o, dev, report, row, [&]() -> std::function<void()> {
        Generator gen(0);
        attn = models::make_attention(cfg, s.C, s.H, 0.0, gen);
        attn->to(dev);
        attn->train(backward);
        x = random_input({s.B, s.N, s.C}, dev);  // [B, N, C]
        if (!backward)
          return [&] {
            NoGradGuard no_grad;
            nn::AutocastGuard autocast(amp_for(dev));
            attn->forward(x);
          };
        x.set_requires_grad(true);
        return [&] {
          Tensor out;
          {
            nn::AutocastGuard autocast(amp_for(dev));
            out = attn->forward(x);
          }
          if (!grad.defined()) grad = Tensor::ones(out.shape(), out.dtype(), dev);
          out.backward(grad);
        };
      });
    }
}

void run_layers(const Options& o, Device dev, Report& report, bool ns_given) {
  const std::vector<int64_t> ns =
      ns_given ? o.ns : std::vector<int64_t>{197, 1024, 4096, 16384, 65536, 262144, 1048576};
  for (int64_t N : ns) {
    models::AttentionConfig mita = models::figure5_config("mita", N, o.impl).attention;
    run_layer(o, dev, report, {"C128H2", 128, 2, N, std::max<int64_t>(1, o.layer_tokens / N), mita});
  }
  if (o.no_deit) return;
  models::AttentionConfig deit;  // the ViT's MiTA: CLS + 14² patches, shifted 2-D pooling to 5×5 landmarks
  deit.type = "mita", deit.m = 25, deit.k = 25, deit.landmark_pool = "shifted", deit.impl = o.impl;
  run_layer(o, dev, report, {"deit_s", 384, 6, 197, 256, deit});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Figure 5: long-sequence throughput of dense attention vs MiTA (bf16 inference)"};
  Options o;
  app.add_option("--device", o.device, "cuda:N | cpu (cpu: f32, for checking the tool)")->capture_default_str();
  app.add_option("--kinds", o.kinds, "attention kinds: dense, mita")->delimiter(',')->capture_default_str();
  app.add_option("--ns", o.ns, "sequence lengths N (--layer default: 197,1024,...,1048576)")->delimiter(',');
  app.add_option("--batch-dense", o.batch_dense, "batch per N for dense (last value repeats)")->delimiter(',');
  app.add_option("--batch-mita", o.batch_mita, "batch per N for MiTA (last value repeats)")->delimiter(',');
  app.add_option("--iters", o.iters, "most timed calls per measurement")->capture_default_str();
  app.add_option("--warmup", o.warmup,
                 "untimed calls first (fewer when one is slower than --target-s; "
                 "one slower than 4x --target-s is the measurement)")
      ->capture_default_str();
  app.add_option("--target-s", o.target_s, "seconds of timed calls to aim for per measurement")->capture_default_str();
  app.add_option("--repeats", o.repeats, "timed windows per measurement (the figure is their median)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--impl", o.impl, "MiTA implementation: fused | reference")->capture_default_str();
  app.add_flag("--deterministic", o.deterministic, "MiTA backward without float atomics");
  app.add_option("--csv", o.csv, "write the rows to this CSV file");
  app.add_flag("--layer", o.layer, "time the attention layer alone (forward, forward + backward)");
  app.add_option("--layer-tokens", o.layer_tokens, "--layer: batch = max(1, this / N)")->capture_default_str();
  app.add_flag("--no-deit", o.no_deit, "--layer: skip the DeiT-S shape (C 384, H 6, N 197, B 256)");
  CLI11_PARSE(app, argc, argv);
  try {
    const Device dev = engine::resolve_device(o.device);
    Report report(o.csv);
    std::printf("%s, %s, %s\n", dev.str().c_str(), dev.is_cuda() ? "bf16 autocast" : "f32",
                o.layer ? "attention layer alone" : "3-block sequence model, inference");
    if (o.layer) run_layers(o, dev, report, app.count("--ns") > 0);
    else run_model(o, dev, report);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_mita_long: %s\n", e.what());
    return 1;
  }
  return 0;
}
