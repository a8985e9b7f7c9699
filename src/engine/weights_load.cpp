#include "engine/weights_load.h"

#include <spdlog/spdlog.h>

#include <set>

#include "engine/timm_weights.h"
#include "engine/trainer.h"
#include "engine/weight_layouts.h"

namespace vt::engine {

namespace {

std::string listed(const std::vector<std::string>& names) {
  constexpr size_t kShown = 24;
  std::string s;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > kShown) s += ", ... (" + std::to_string(names.size() - kShown) + " more)";
  return s;
}

std::vector<std::string> state_names(const nn::Module& model) {
  std::vector<std::string> names;
  for (const auto& [name, t] : model.state_dict()) names.push_back(name);
  return names;
}

// The file read and put in our layout, with the log lines saying what was left out or renamed.
WeightsFile read_in_our_layout(const std::string& path, WeightsPick pick) {
  WeightsFile file = load_weights_file(path, pick);
  if (!file.source.empty()) spdlog::info("{}: taking the '{}' weights", path, file.source);
  if (!file.left_out.empty()) {
    std::string s;
    for (const auto& x : file.left_out) s += (s.empty() ? "" : ", ") + x;
    spdlog::info("{}: left out {}", path, s);
  }
  for (const auto& line : from_official_layout(file.tensors)) spdlog::info("{}: {}", path, line);
  return file;
}

void load_exactly(nn::Module& model, const io::NamedTensors& weights, const std::string& path) {
  try {
    model.load_state_dict(weights, true);
  } catch (const Error& e) {
    VT_FAIL("[weights] '", path, "' does not fit the model: ", e.what());
  }
}

}  // namespace

io::NamedTensors read_model_weights(const std::string& path, WeightsPick pick) {
  return read_in_our_layout(path, pick).tensors;
}

WeightsFit compare_names(const std::vector<std::string>& expected, const io::NamedTensors& weights) {
  WeightsFit fit;
  std::set<std::string> want(expected.begin(), expected.end()), have;
  for (const auto& [name, t] : weights) {
    have.insert(name);
    if (!want.count(name)) fit.unexpected.push_back(name);
  }
  for (const auto& name : expected)
    if (!have.count(name)) fit.missing.push_back(name);
  return fit;
}

void enforce_fit(const WeightsFit& fit, const std::string& path, const std::string& what, bool strict) {
  if (fit.exact()) return;
  std::string msg = "'" + path + "' does not match " + what + ":";
  if (!fit.missing.empty())
    msg += " " + std::to_string(fit.missing.size()) + " missing tensor(s): " + listed(fit.missing) + ";";
  if (!fit.unexpected.empty())
    msg += " " + std::to_string(fit.unexpected.size()) + " unexpected tensor(s): " + listed(fit.unexpected) + ";";
  msg.pop_back();
  VT_CHECK(!strict, "[weights] ", msg, " (--non-strict loads it anyway, keeping the model's own values for the ",
           "missing ones and ignoring the unexpected ones)");
  spdlog::warn("[weights] --non-strict: {}", msg);
}

void load_vit_weights(models::VisionTransformer& model, const std::string& path, const WeightsLoadOptions& options) {
  WeightsFile file = read_in_our_layout(path, options.pick);
  const std::string what = "the model (" + model.config().attention.type + " attention" +
                           (model.config().distilled ? ", distilled" : "") + ")";
  if (!options.strict) {
    enforce_fit(compare_names(state_names(model), file.tensors), path, what, false);
    load_timm_weights(model, std::move(file.tensors));
    return;
  }
  TimmAdaptOptions adapt;  // pos_embed to the model's grid (as timm's create_model does); the head stays as is
  adapt.adapt_head = false;
  for (const auto& line : adapt_timm_weights(file.tensors, model.config(), adapt)) spdlog::info("{}: {}", path, line);
  enforce_fit(compare_names(state_names(model), file.tensors), path, what, true);
  load_exactly(model, file.tensors, path);
}

void load_segmenter_file(models::Segmenter& model, const std::string& path, const WeightsLoadOptions& options) {
  WeightsFile file = read_in_our_layout(path, options.pick);
  for (auto& [name, t] : file.tensors)
    if (is_floating(t.dtype()) && t.dtype() != DType::f32) t = t.to(DType::f32);
  enforce_fit(compare_names(state_names(model), file.tensors), path, "the segmentation model", options.strict);
  if (options.strict) return load_exactly(model, file.tensors, path);
  // Missing tensors keep the model's own values, except a qkv that a gated file's qkvg rows supply.
  std::set<std::string> have;
  for (const auto& [name, t] : file.tensors) have.insert(name);
  for (const auto& [name, t] : model.state_dict()) {
    std::string gated = name;
    const bool from_gate = gated.find(".attn.qkv.") != std::string::npos &&
                           have.count(gated.replace(gated.find(".attn.qkv."), 10, ".attn.qkvg."));
    if (!have.count(name) && !from_gate) file.tensors.emplace_back(name, t.detach().to(cpu()));
  }
  try {
    load_weights_compatible(model, file.tensors);
  } catch (const Error& e) {
    VT_FAIL("[weights] '", path, "' does not fit the segmentation model: ", e.what());
  }
}

}  // namespace vt::engine
