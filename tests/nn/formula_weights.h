// Deterministic "weights from a formula", identical to scripts/gen_deit_reference.py, so a timm parity fixture
// needs only timm's outputs, not the 5.7M weights. For a tensor named `name` with n elements, flat index i,
// computed in double and rounded to f32:
//   phase(name) = fnv1a32(utf8 name) / 2^32 · 2π;   value_i = offset + amp · sin((0.1 + 1e-4·i)·i + phase)
//   LayerNorm weights (module name before ".weight" starts with "norm"): offset 1, amp 0.1;
//   other ".bias": offset 0, amp 0.01;  everything else: offset 0, amp 0.03;  "input": offset 0, amp 1.
// The expression order matches the Python (IEEE double, no FMA at -march=x86-64-v2), so values agree to the
// last bit up to the sin implementations (≤ 1 ulp in double, which rarely changes the f32 rounding).
#pragma once
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <utility>

#include "tensor/tensor.h"

namespace vt::test {

inline uint32_t fnv1a32(const std::string& s) {
  uint32_t h = 0x811C9DC5u;
  for (unsigned char b : s) h = (h ^ b) * 0x01000193u;
  return h;
}

inline double formula_phase(const std::string& name) {
  return static_cast<double>(fnv1a32(name)) / 4294967296.0 * (2.0 * std::numbers::pi);
}

/// {offset, amplitude} for a tensor name.
inline std::pair<double, double> formula_offset_amp(const std::string& name) {
  if (name == "input") return {0.0, 1.0};
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".weight") || name == "weight") {
    std::string stem = name.substr(0, name.size() - std::string("weight").size());
    if (!stem.empty()) stem.pop_back();  // the '.'
    const size_t dot = stem.rfind('.');
    const std::string module = dot == std::string::npos ? stem : stem.substr(dot + 1);
    if (module.rfind("norm", 0) == 0 && !stem.empty()) return {1.0, 0.1};
  }
  if (ends_with(".bias") || name == "bias") return {0.0, 0.01};
  return {0.0, 0.03};
}

/// A contiguous f32 tensor of `shape` holding the formula values for `name`.
inline Tensor formula_tensor(const std::string& name, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::f32);
  float* p = t.data<float>();
  const auto [off, amp] = formula_offset_amp(name);
  const double ph = formula_phase(name);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i);
    p[i] = static_cast<float>(off + amp * std::sin((0.1 + 1e-4 * x) * x + ph));
  }
  return t;
}

}  // namespace vt::test
