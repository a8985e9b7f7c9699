// Loading a weights file into a model for evaluation, with timm's strict=True by default: a tensor the model
// needs that the file lacks, or one the file has that the model does not use, is an error naming the file and
// the tensors; non-strict loading goes on with a warning listing them (dense weights into another attention kind,
// a head for another class count, ...).
#pragma once
#include <string>
#include <vector>

#include "engine/weights_file.h"
#include "models/segmenter.h"
#include "models/vit.h"

namespace vt::engine {

struct WeightsLoadOptions {
  WeightsPick pick = WeightsPick::weights;  ///< a training checkpoint's raw or EMA weights (--ema)
  bool strict = true;                       ///< false: --non-strict
};

/// load_weights_file + from_official_layout: the tensors of `path` under our names, what was left out or renamed
/// logged. What fine-tuning init (model.initial_checkpoint) and the pictures read.
io::NamedTensors read_model_weights(const std::string& path, WeightsPick pick = WeightsPick::weights);

/// The names that keep `weights` from matching `expected` exactly.
struct WeightsFit {
  std::vector<std::string> missing;     ///< expected, not in the weights
  std::vector<std::string> unexpected;  ///< in the weights, not expected
  bool exact() const { return missing.empty() && unexpected.empty(); }
};

WeightsFit compare_names(const std::vector<std::string>& expected, const io::NamedTensors& weights);

/// Strict: throws "<path>: N missing tensor(s): a, b, ...; M unexpected tensor(s): ..." unless `fit` is exact.
/// Non-strict: logs the same lists as a warning. `what` says what the weights were matched against.
void enforce_fit(const WeightsFit& fit, const std::string& path, const std::string& what, bool strict);

/// Reads `path` (load_weights_file), maps official names to ours (from_official_layout), resizes pos_embed to
/// the model's grid, checks the names against model.state_dict() (enforce_fit) and loads. Non-strict loading
/// adapts what it can (load_timm_weights: a head for another class count dropped, dense weights into other
/// kinds, a gate's qkvg rows) and keeps the model's own values for the rest.
void load_vit_weights(models::VisionTransformer& model, const std::string& path, const WeightsLoadOptions& options);

/// The same for a whole Segmenter (encoder. + decoder.), e.g. the official MiTA-Segmenter checkpoint.pth.
void load_segmenter_file(models::Segmenter& model, const std::string& path, const WeightsLoadOptions& options);

}  // namespace vt::engine
