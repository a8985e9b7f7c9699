// Checkpoint files: safetensors with prefixed groups and string metadata (see the header for the layout).
#include "engine/checkpoint.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "io/metrics.h"

namespace vt::engine {
namespace {

constexpr const char* kFormat = "vitrain-checkpoint";
constexpr const char* kVersion = "1";
const std::string kEmaPrefix = "ema.", kOptimPrefix = "optim.";

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

const std::string& meta(const std::map<std::string, std::string>& m, const std::string& key, const std::string& path) {
  auto it = m.find(key);
  VT_CHECK(it != m.end(), "[checkpoint] '", path, "' lacks the metadata entry '", key, "' (damaged or foreign file)");
  return it->second;
}

template <class T>
T parse_int(const std::string& text, const std::string& key, const std::string& path) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  VT_CHECK(ec == std::errc() && p == text.data() + text.size(), "[checkpoint] '", path, "': metadata '", key,
           "' is not an integer: '", text, "'");
  return v;
}

double parse_double(const std::string& text, const std::string& key, const std::string& path) {
  if (text == "null") return std::nan("");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  VT_CHECK(!text.empty() && end == text.c_str() + text.size(), "[checkpoint] '", path, "': metadata '", key,
           "' is not a number: '", text, "'");
  return v;
}

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  io::NamedTensors all;
  all.reserve(ckpt.model.size() + ckpt.ema.size() + ckpt.optimizer.size());
  for (const auto& [name, t] : ckpt.model) {
    VT_CHECK(!starts_with(name, kEmaPrefix) && !starts_with(name, kOptimPrefix), "[checkpoint] model tensor '", name,
             "' collides with a reserved prefix");
    all.emplace_back(name, t);
  }
  for (const auto& [name, t] : ckpt.ema) all.emplace_back(kEmaPrefix + name, t);
  for (const auto& [name, t] : ckpt.optimizer) all.emplace_back(kOptimPrefix + name, t);
  const CheckpointState& s = ckpt.state;
  std::map<std::string, std::string> m = {
      {"format", kFormat},
      {"version", kVersion},
      {"epoch", std::to_string(s.position.epoch)},
      {"step_in_epoch", std::to_string(s.position.step_in_epoch)},
      {"global_step", std::to_string(s.position.global_step)},
      {"best_metric", io::format_number(s.best_metric)},
      {"best_epoch", std::to_string(s.best_epoch)},
      {"rng_seed", std::to_string(s.rng_seed)},
      {"rng_offset", std::to_string(s.rng_offset)},
      {"data_seed", std::to_string(s.data_seed)},
      {"has_ema", ckpt.ema.empty() ? "0" : "1"},
      {"config", s.config_yaml},
  };
  io::save_safetensors(path, all, m);  // atomic: temporary file, fsync, rename, directory fsync
}

Checkpoint load_checkpoint(const std::string& path) {
  io::SafetensorsFile file;
  try {
    file = io::read_safetensors(path);
  } catch (const Error& e) {
    VT_FAIL("[checkpoint] cannot read '", path, "' (truncated, damaged or not a safetensors file): ", e.what());
  }
  return load_checkpoint(std::move(file), path);
}

bool is_training_checkpoint(const std::map<std::string, std::string>& metadata) {
  auto f = metadata.find("format");
  return f != metadata.end() && f->second == kFormat;
}

Checkpoint load_checkpoint(io::SafetensorsFile file, const std::string& path) {
  auto f = file.metadata.find("format");
  VT_CHECK(f != file.metadata.end() && f->second == kFormat, "[checkpoint] '", path,
           "' is not a vitrain training checkpoint (no __metadata__.format = ", kFormat,
           "); plain weights load with `vitrain eval --weights` instead");
  const std::string& version = meta(file.metadata, "version", path);
  VT_CHECK(version == kVersion, "[checkpoint] '", path, "' has format version ", version, "; this build reads ",
           kVersion);
  Checkpoint c;
  const auto& m = file.metadata;
  CheckpointState& s = c.state;
  s.position.epoch = parse_int<int64_t>(meta(m, "epoch", path), "epoch", path);
  s.position.step_in_epoch = parse_int<int64_t>(meta(m, "step_in_epoch", path), "step_in_epoch", path);
  s.position.global_step = parse_int<int64_t>(meta(m, "global_step", path), "global_step", path);
  s.best_metric = parse_double(meta(m, "best_metric", path), "best_metric", path);
  s.best_epoch = parse_int<int64_t>(meta(m, "best_epoch", path), "best_epoch", path);
  s.rng_seed = parse_int<uint64_t>(meta(m, "rng_seed", path), "rng_seed", path);
  s.rng_offset = parse_int<uint64_t>(meta(m, "rng_offset", path), "rng_offset", path);
  s.data_seed = parse_int<uint64_t>(meta(m, "data_seed", path), "data_seed", path);
  s.config_yaml = meta(m, "config", path);
  VT_CHECK(s.position.epoch >= 0 && s.position.step_in_epoch >= 0 && s.position.global_step >= 0, "[checkpoint] '",
           path, "': negative position");
  const bool has_ema = meta(m, "has_ema", path) == "1";
  for (auto& [name, t] : file.tensors) {
    if (starts_with(name, kEmaPrefix)) c.ema.emplace_back(name.substr(kEmaPrefix.size()), std::move(t));
    else if (starts_with(name, kOptimPrefix)) c.optimizer.emplace_back(name.substr(kOptimPrefix.size()), std::move(t));
    else c.model.emplace_back(name, std::move(t));
  }
  VT_CHECK(!c.model.empty(), "[checkpoint] '", path, "' holds no model weights");
  VT_CHECK(has_ema == !c.ema.empty(), "[checkpoint] '", path, "': metadata says has_ema=", has_ema, " but it holds ",
           c.ema.size(), " EMA tensors");
  return c;
}

int64_t checkpoint_global_step(const std::string& path) { return load_checkpoint(path).state.position.global_step; }

}  // namespace vt::engine
