// Full-size parity with timm (shared by tests/nn on the CPU and tests/cuda on the GPU): our DeiT-Tiny (preset "deit_tiny_patch16_224") and timm's deit_tiny_patch16_224, with
// the same weights and input from the formula of formula_weights.h, give the same logits, loss and gradients.
// The fixture (logits, loss, per-parameter gradient statistics of timm in float64) comes from
// scripts/gen_deit_reference.py, run with timm on the GPU machine; the weights are not stored.
//
// Tolerances, f32 here against an f64 reference. The network is 12 pre-norm blocks with dot products of length
// ≤ 768; f32 rounding (u ≈ 6e-8) accumulates to relative errors of ~1e-6..1e-5 in activations and, through the
// softmax/LayerNorm backward, ~1e-5 relative in individual gradient elements. llm.c's 1e-4 + 1e-3·|r| passed
// with 150× headroom but also let small real differences through (GELU tanh-vs-erf moved logits by only ~2e-4),
// so the bounds are 5× (logits) and 4× (gradients) tighter, still ≥ 30× above the worst f32 error measured:
//   logits:  |a − r| ≤ 2e-5 + 2e-4·|r|      (logits are ~0.3; measured error ≤ ~3e-6)
//   loss:    |a − r| ≤ 2e-6 + 2e-6·|r|      (measured 3e-7; the f32 spacing at 6.9 is 5e-7)
//   per-parameter gradient with RMS s = sqrt(sumsq/n) of timm's gradient:
//     sum:      |a − r| ≤ 5e-4·s·√n     (the sum's own rounding and per-element errors both scale with ‖g‖₂ = s·√n)
//     sumsq:    |a − r| ≤ 5e-4·|r|      (≈ 2× the relative element error)
//     samples:  |a − r| ≤ 5e-4·|r| + 2.5e-4·s (absolute part for elements near zero)
// Checked in a dry run against a float64 plain-PyTorch DeiT-T: each of GELU tanh instead of erf, one Linear
// weight's amplitude off by 1%, one LayerNorm bias off by 5% fails both the logits and the gradient checks.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "io/safetensors.h"
#include "models/registry.h"
#include "models/vit.h"
#include "ops/ops.h"
#include "tests/nn/formula_weights.h"

namespace vt::test::deit_parity {

// sum and sum of squares, in double.
inline std::pair<double, double> sum_sumsq(const std::vector<double>& v) {
  double s = 0, q = 0;
  for (double x : v) s += x, q += x * x;
  return {s, q};
}

// Worst |error| / tolerance of one check category, reported so the margins are visible in the log.
struct Worst {
  double ratio = 0;
  std::string where;
  void add(double err, double tol, const std::string& what) {
    if (err / tol > ratio) ratio = err / tol, where = what;
  }
};

/// Loads the fixture, runs our DeiT-Tiny on `device` (f32) and checks logits, loss and gradients against timm.
inline void check_deit_tiny_parity(Device device) {
  const std::string path = std::string(VT_SOURCE_DIR) + "/tests/ref/deit_tiny_ref.safetensors";
  ASSERT_TRUE(std::filesystem::exists(path)) << "fixture " << path << " missing: run scripts/gen_deit_reference.py";
  io::SafetensorsFile file = io::read_safetensors(path);
  std::map<std::string, Tensor> ref;
  for (auto& [name, t] : file.tensors) ref[name] = t;
  auto ref_vec = [&](const std::string& name) {
    auto it = ref.find(name);
    if (it == ref.end()) ADD_FAILURE() << "fixture has no tensor '" << name << "'";
    return it == ref.end() ? std::vector<double>{} : it->second.to_vector();
  };

  models::VisionTransformer m(models::preset("deit_tiny_patch16_224"));
  m.eval();  // the fixture is timm in eval mode (deit_tiny's drop rates are 0, so train mode would match too)
  nn::NamedTensors weights;
  for (auto& [name, p] : m.named_parameters()) weights.emplace_back(name, formula_tensor(name, p.shape()));
  m.load_state_dict(weights);
  m.to(device);
  const Tensor input = formula_tensor("input", {2, 3, 224, 224});

  // Same parameter set as timm: every parameter has statistics and there are no others.
  size_t n_stats = 0;
  for (auto& [name, t] : ref) n_stats += name.rfind("gstat.", 0) == 0;
  ASSERT_EQ(n_stats, m.named_parameters().size()) << "parameter count differs from timm's";
  for (auto& [name, p] : m.named_parameters())
    ASSERT_TRUE(ref.count("gstat." + name)) << "timm has no parameter '" << name << "'";

  // The formula must be the Python one before anything else means something.
  for (auto& [key, t] : ref) {
    if (key.rfind("check.", 0) != 0) continue;
    const std::string name = key.substr(6);
    std::vector<double> v;
    if (name == "input") {
      v = input.to_vector();
    } else {
      for (auto& [pn, p] : weights)
        if (pn == name) v = p.to_vector();
    }
    ASSERT_FALSE(v.empty()) << "fixture checks '" << name << "', which our model lacks";
    auto [s, q] = sum_sumsq(v);
    auto r = t.to_vector();
    ASSERT_EQ(r.size(), 2u);
    ASSERT_TRUE(std::abs(s - r[0]) <= 1e-6 * std::sqrt(r[1]) && std::abs(q - r[1]) <= 1e-6 * r[1])
        << "formula values for '" << name << "' differ from scripts/gen_deit_reference.py (sum " << s << " vs " << r[0]
        << ", sumsq " << q << " vs " << r[1] << "): fix tests/nn/formula_weights.h";
  }

  Tensor logits = m.forward(input.to(device));
  ASSERT_EQ(logits.shape(), (Shape{2, 1000}));
  Worst w_logit, w_sum, w_sq, w_sample;
  {
    auto a = logits.to(cpu()).to_vector(), r = ref_vec("logits");
    ASSERT_EQ(a.size(), r.size());
    int bad = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const double err = std::abs(a[i] - r[i]), tol = 2e-5 + 2e-4 * std::abs(r[i]);
      w_logit.add(err, tol, "logits[" + std::to_string(i) + "]");
      if (!(err <= tol) && bad++ < 5) ADD_FAILURE() << "logits[" << i << "]: ours " << a[i] << ", timm " << r[i];
    }
  }
  const Tensor target = Tensor::from_vector({3, 917}, {2}, DType::i64);
  Tensor loss = ops::cross_entropy(logits, target.to(device), 0.1);
  const double loss_ref = ref_vec("loss").at(0);
  EXPECT_NEAR(loss.item(), loss_ref, 2e-6 + 2e-6 * std::abs(loss_ref)) << "label-smoothed cross-entropy";
  std::printf("[%s] loss: ours %.9f, timm %.9f\n", device.str().c_str(), loss.item(), loss_ref);
  loss.backward();

  int bad = 0;
  for (auto& [name, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << "no gradient for " << name;
    auto g = p.grad().to(cpu()).to_vector();
    auto r = ref_vec("gstat." + name);
    ASSERT_EQ(r.size(), 18u) << name;
    const int64_t n = static_cast<int64_t>(g.size());
    const double rms = std::sqrt(r[1] / static_cast<double>(n));
    auto [s, q] = sum_sumsq(g);
    auto check = [&](Worst& w, double a, double ref_v, double tol, const std::string& what) {
      w.add(std::abs(a - ref_v), tol, what);
      if (!(std::abs(a - ref_v) <= tol) && bad++ < 10)
        ADD_FAILURE() << what << ": ours " << a << ", timm " << ref_v << " (tolerance " << tol << ")";
    };
    check(w_sum, s, r[0], 5e-4 * rms * std::sqrt(static_cast<double>(n)) + 1e-30, "grad sum " + name);
    check(w_sq, q, r[1], 5e-4 * r[1] + 1e-30, "grad sumsq " + name);
    for (int64_t k = 0; k < 16; ++k) {
      const int64_t i = k * n / 16;
      check(w_sample, g[static_cast<size_t>(i)], r[2 + k], 5e-4 * std::abs(r[2 + k]) + 2.5e-4 * rms + 1e-30,
            "grad " + name + "[" + std::to_string(i) + "]");
    }
  }
  std::printf("worst error/tolerance: logits %.3g (%s), grad sum %.3g (%s), sumsq %.3g (%s), samples %.3g (%s)\n",
              w_logit.ratio, w_logit.where.c_str(), w_sum.ratio, w_sum.where.c_str(), w_sq.ratio, w_sq.where.c_str(),
              w_sample.ratio, w_sample.where.c_str());
}

}  // namespace vt::test::deit_parity
