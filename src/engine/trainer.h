// The training and evaluation loops for image classification: explicit steps, no callbacks.
#pragma once
#include <string>

#include "data/image_batches.h"
#include "io/config.h"
#include "models/vit.h"

namespace vt::engine {

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;  // top1/top5 in percent
  int64_t count = 0;
};

struct TrainSummary {
  EvalResult test;
  double train_img_per_s = 0, train_seconds = 0;
  std::string weights_path, metrics_path, log_path;
};

/// The model architecture a config asks for: the named preset with the config's overrides.
models::ViTConfig vit_config(const io::Config& cfg);

EvalResult evaluate(const models::VisionTransformer& model, data::ImageBatches& batches);

/// Trains on the configured dataset, evaluates after every epoch, writes the log, metrics and final weights
/// under cfg.train.output.
TrainSummary train(const io::Config& cfg);

/// Loads weights (safetensors) into the configured model and evaluates the test split.
EvalResult evaluate_weights(const io::Config& cfg, const std::string& weights_path);

}  // namespace vt::engine
