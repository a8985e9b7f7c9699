// Throughput benchmark on synthetic data (what `vitrain bench` runs): training steps (forward + loss + backward +
// optimizer) and optionally inference, timed with the device synchronized only at the ends of each timed region.
// Classification: a preset ViT, cross-entropy, AdamW. Segmentation (options.segmenter set): the Segmenter of a
// segmentation config, pixel cross-entropy on the upsampled logits against random labels (some 255), SGD Nesterov
// as spec §5, and evaluation windows (forward of crop-sized images) as the inference phase. Sequence
// (options.sequence_length > 0): models::SequenceClassifier on random token features [B, N, dim], cross-entropy,
// AdamW (img/s then counts sequences).
// With repeats > 1 the same process times that many windows of `steps` steps each after one warm-up.
// Under `vitrain launch -n N` every rank trains its own batch with data-parallel gradients (DDP buckets, or ZeRO-1),
// img/s counts all ranks, and the all-reduce of one gradient's worth of f32 is timed alone afterwards.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/device.h"
#include "models/attention.h"
#include "models/segmenter.h"
#include "models/sequence_model.h"

namespace vt::engine {

struct BenchOptions {
  std::string model = "deit_small_patch16_224";  ///< registry preset (224², 1000 classes for the DeiT presets)
  models::AttentionConfig attention;             ///< dense unless asked otherwise
  int64_t batch_size = 256;
  int64_t steps = 50;   ///< timed steps
  int64_t warmup = 10;  ///< untimed steps before them
  int64_t repeats = 1;  ///< timed windows of `steps` steps each (the reported figure is their median)
  std::string device = "auto";
  bool amp = false;    ///< bf16 autocast (CUDA only; ignored on the CPU)
  bool train = true;   ///< time training steps (false: inference only, timm benchmark.py's --bench inference)
  bool infer = false;  ///< also time inference (eval mode, no grad)
  int threads = 0;     ///< CPU threads; 0: all cores
  double smoothing = 0.1;
  bool zero1 = false;       ///< data parallel: ZeRO-1 (classification, AdamW) instead of DDP
  double bucket_mb = 25.0;  ///< data parallel: gradient bucket size
  bool cuda_graph = false;  ///< capture the step in a CUDA graph and replay it (engine/graph_step.h; one GPU)
  /// Set (from --config): benchmark this classifier (image size, depth, ... of the config) instead of the preset
  /// `model`; its attention is still `attention`.
  std::optional<models::ViTConfig> vit;
  /// Set: benchmark this Segmenter (model names the config's preset) instead of the classifier `model`.
  std::optional<models::SegmenterConfig> segmenter;
  /// > 0: benchmark the sequence classifier `sequence` (its attention replaced by `attention`) at this N.
  int64_t sequence_length = 0;
  models::SequenceConfig sequence;
  int64_t sequence_classes = 10;
};

struct BenchResult {
  std::string device;  ///< "cpu" or "cuda:N"
  bool amp = false;    ///< whether bf16 autocast was in effect
  int64_t params = 0;
  double train_img_per_s = 0, train_step_ms = 0, last_loss = 0;  ///< img/s and ms: the median window
  std::vector<double> train_runs, infer_runs;                    ///< img/s of each timed window
  std::optional<PeakMemory> train_peak;
  bool has_train = false, has_infer = false;
  double infer_img_per_s = 0, infer_batch_ms = 0;
  std::optional<PeakMemory> infer_peak;
  int world = 1;                                      ///< ranks of a launched job (img/s counts all of them)
  bool lead = true;                                   ///< rank 0: the one that reports
  double allreduce_ms = 0, allreduce_busbw_gbps = 0;  ///< world > 1: one gradient-sized f32 all-reduce, alone
  size_t graph_nodes = 0;                             ///< --cuda-graph: nodes of the captured training step
  size_t infer_graph_nodes = 0;                       ///< --cuda-graph: nodes of the captured inference batch
};

/// Builds the model on the device and runs the benchmark; throws on bad options (unknown model, device, ...).
BenchResult run_bench(const BenchOptions& opt);

/// One JSON object on one line with the options and results (keys shared with scripts/bench_timm.py:
/// impl, model, task, batch_size, amp, device, train_img_per_s, train_step_ms, train_peak_mem_gib, infer_img_per_s,
/// infer_peak_mem_gib; a value that was not measured is null), plus train_runs / infer_runs (img/s per window).
std::string bench_json(const BenchOptions& opt, const BenchResult& r);

}  // namespace vt::engine
