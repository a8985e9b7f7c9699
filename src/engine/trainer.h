// The training and evaluation loops for image classification: explicit steps, no callbacks.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "data/image_batches.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "models/vit.h"

namespace vt::engine {

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;  // top1/top5 in percent
  int64_t count = 0;
};

struct TrainSummary {
  EvalResult test;
  double train_img_per_s = 0, train_seconds = 0;
  std::string device;  // "cpu" or "cuda:N"
  std::string weights_path, metrics_path, log_path;
};

/// The model architecture a config asks for: the named preset with the config's overrides.
models::ViTConfig vit_config(const io::Config& cfg);

/// The autocast dtype a config asks for: bf16 when train.amp is on (only used on CUDA), else none.
std::optional<DType> amp_dtype(const io::Config& cfg);

/// Top-1/top-5 and mean loss over one pass of `batches`. The model must be on `device`; each batch is copied
/// there and run under `amp`, and the logits come back to the host in f32 for the metrics.
EvalResult evaluate(const models::VisionTransformer& model, data::ImageBatches& batches, Device device = cpu(),
                    std::optional<DType> amp = std::nullopt);

/// Trains on the configured dataset on cfg.train.device (bf16 autocast on CUDA when cfg.train.amp), evaluates
/// after every epoch, writes the log, metrics and final weights under cfg.train.output. Inside a step the host
/// waits for the device only when a progress line reads the loss.
TrainSummary train(const io::Config& cfg);

/// What load_weights_compatible did besides plain name-for-name copies.
struct WeightLoadReport {
  std::vector<std::string> ignored;  // tensors in the weights the model has no use for (e.g. dwc.*, agent biases)
  std::vector<std::string> adapted;  // "blocks.0.attn.qkv.weight <- blocks.0.attn.qkvg.weight[:3C]"
};

/// Loads weights written by a model with another attention kind (the paper's Appendix C swap): tensors the model
/// lacks are ignored (listed in the report), a gated model's `qkvg` [4C, ...] supplies `qkv` (its q, k, v rows)
/// when the model has no gate. A tensor the model needs that the weights lack, or a shape mismatch, is an error
/// naming the tensor.
WeightLoadReport load_weights_compatible(nn::Module& model, const io::NamedTensors& weights);

/// Loads weights (safetensors) into the configured model and evaluates the test split on cfg.train.device. The weights may come from
/// another attention kind (load_weights_compatible; ignored tensors are logged as a warning).
EvalResult evaluate_weights(const io::Config& cfg, const std::string& weights_path);

}  // namespace vt::engine
