// Fixtures written by scripts/make_baseline_fixtures.py from the authors' own modules (QishuaiWen/MiTA,
// MiTA-DeiT/mita/*.py; rayleizhu/BiFormer's ops/bra_legacy.py for bra): x, the official state dict (state.*),
// y = module(x), a cotangent g, dx = d<y, g>/dx, the parameter gradients (grad.*) and the sizes (size.*), all f64
// (tests/nn/fixtures/<kind>.pth). Read here, and run through our layer: test_baseline_fixtures.cpp and
// test_official_mita_fixtures.cpp on the CPU, cuda/test_official_mita_cuda.cpp on the GPU.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/weight_layouts.h"
#include "io/torch_checkpoint.h"
#include "models/agent_attention.h"
#include "models/attention.h"
#include "models/bra_attention.h"
#include "models/linear_attention.h"
#include "models/mita_attention.h"
#include "ops/ops.h"

namespace vt::test {

struct OfficialFixture {
  std::map<std::string, Tensor> t;
  std::map<std::string, Shape> state_shapes;  // "qkv.weight" → shape, the official module's state dict
  const Tensor& operator[](const std::string& name) const {
    auto it = t.find(name);
    if (it == t.end()) throw std::runtime_error("fixture has no tensor '" + name + "'");
    return it->second;
  }
  Tensor state(const std::string& name) const { return (*this)["state." + name]; }
  int64_t size(const std::string& name) const { return static_cast<int64_t>((*this)["size." + name].to_vector()[0]); }
};

inline OfficialFixture load_official_fixture(const std::string& kind) {
  OfficialFixture f;
  const std::string path = std::string(VT_SOURCE_DIR) + "/tests/nn/fixtures/" + kind + ".pth";
  for (auto& [name, tensor] : io::read_torch_checkpoint(path).tensors) {
    if (name.rfind("state.", 0) == 0) f.state_shapes[name.substr(6)] = tensor.shape();
    f.t[name] = tensor;
  }
  return f;
}

/// Our name of an official attention tensor, by the map official checkpoints load through
/// (engine::from_official_layout, which sees it inside a block: "blocks.0.attn.<name>").
inline std::string our_attention_name(const std::string& official) {
  const std::string prefix = "blocks.0.attn.";
  io::NamedTensors one = {{prefix + official, Tensor()}};
  engine::from_official_layout(one);
  return one.at(0).first.substr(prefix.size());
}

/// The layer's parameter handles by our name, for the kinds with fixtures (MiTA, Agent, linear, BRA), so a test can
/// bind f64 or device leaves in place of the f32 ones the layer was built with.
inline std::map<std::string, Tensor*> attention_parameter_slots(models::Attention& layer) {
  std::map<std::string, Tensor*> s;
  auto linear = [&](const std::string& name, nn::Linear* l) {
    if (!l) return;
    s[name + ".weight"] = &l->weight;
    if (l->bias.defined()) s[name + ".bias"] = &l->bias;
  };
  if (auto* m = dynamic_cast<models::MitaAttention*>(&layer)) {
    linear("qkv", m->qkv.get()), linear("qkvg", m->qkvg.get()), linear("proj", m->proj.get());
    if (m->dwc) s["dwc.weight"] = &m->dwc->weight, s["dwc.bias"] = &m->dwc->bias;
  } else if (auto* a = dynamic_cast<models::AgentAttention*>(&layer)) {
    linear("qkv", a->qkv.get()), linear("proj", a->proj.get());
    models::AgentBiases& b = a->bias;
    for (auto [name, slot] : {std::pair{"an_bias", &b.an},
                              {"na_bias", &b.na},
                              {"ah_bias", &b.ah},
                              {"aw_bias", &b.aw},
                              {"ha_bias", &b.ha},
                              {"wa_bias", &b.wa},
                              {"ac_bias", &b.ac},
                              {"ca_bias", &b.ca}})
      if (slot->defined()) s[name] = slot;
  } else if (auto* l = dynamic_cast<models::LinearAttention*>(&layer)) {
    linear("qkv", l->qkv.get()), linear("proj", l->proj.get());
    s["q_norm.weight"] = &l->q_norm_weight, s["k_norm.weight"] = &l->k_norm_weight;
  } else if (auto* r = dynamic_cast<models::BraAttention*>(&layer)) {
    linear("qkv", r->qkv.get()), linear("proj", r->proj.get());
    s["lepe.weight"] = &r->lepe_weight, s["lepe.bias"] = &r->lepe_bias;
  } else {
    ADD_FAILURE() << "attention_parameter_slots: not a MiTA, Agent, linear or BRA attention layer";
  }
  return s;
}

/// Our model.attention for a fixture of the official MiTA-DeiT modules: mita (MiTA_Attention), mita_dwc
/// (MiTA_Attention_Conv), mita_dwc_gate (MiTA_Attention_Conv_Gate), mita_route (MiTA_Attention_Route), agent (Agent_Attention), agent_bias
/// (Agent_Attention_Bias), linear (Linear_Attention); the other settings at their defaults, which are the official
/// choices (shifted landmark pooling, the 1/d shared-branch scale). bra and bra_qk_dim (BiFormer's
/// BiLevelRoutingAttention with our CLS treatment): n_win, topk and the scale from the fixture's sizes.
inline models::AttentionConfig official_fixture_config(const std::string& kind, const OfficialFixture& f) {
  models::AttentionConfig cfg;
  if (kind == "bra" || kind == "bra_qk_dim") {
    cfg.type = "bra";
    cfg.n_win = f.size("n_win"), cfg.topk = f.size("topk");
    cfg.bra_scale = f.size("qk_dim_scale") ? "qk_dim" : "head_dim";
    return cfg;
  }
  const bool dwc = kind == "mita_dwc" || kind == "mita_dwc_gate";
  cfg.type = dwc ? "mita" : kind;
  if (cfg.is_mita()) cfg.m = f.size("m"), cfg.k = f.size("k"), cfg.dwc = dwc, cfg.gate = kind == "mita_dwc_gate";
  if (kind == "agent" || kind == "agent_bias") cfg.agent_num = f.size("agent_num");
  return cfg;
}

/// One tensor of our run next to the fixture's.
struct FixtureComparison {
  std::string name;  // "y", "dx" or "grad.<official name>"
  Tensor got, want;
  double max_abs_err() const {
    const std::vector<double> a = got.to(cpu()).to_vector(), b = want.to_vector();
    double e = 0;
    for (size_t i = 0; i < a.size(); ++i) e = std::max(e, std::isnan(a[i]) ? INFINITY : std::abs(a[i] - b[i]));
    return e;
  }
  double max_abs_want() const {
    double m = 0;
    for (double v : want.to_vector()) m = std::max(m, std::abs(v));
    return m;
  }
};

/// Builds our layer for `cfg` at the fixture's sizes, checks that it holds exactly the official tensors (by the
/// official-to-ours name map, and shape), binds the fixture's weights as `dtype` leaves on `device`, runs
/// y = layer(x) and <y, g>.backward(), and returns y, dx and every parameter gradient next to the fixture's.
inline std::vector<FixtureComparison> run_official_fixture(const OfficialFixture& f, const models::AttentionConfig& cfg,
                                                           DType dtype, Device device) {
  const Tensor& x64 = f["x"];
  Generator gen(1);
  auto layer = models::make_attention(cfg, x64.size(2), f.size("heads"), 0.0, gen, x64.size(1));
  layer->eval();
  std::map<std::string, Tensor*> slots = attention_parameter_slots(*layer);
  std::map<std::string, Shape> ours, want;
  for (const auto& [name, t] : layer->state_dict()) ours[name] = t.shape();
  std::map<std::string, std::string> official_of;
  for (const auto& [official, shape] : f.state_shapes) {
    want[our_attention_name(official)] = shape;
    official_of[our_attention_name(official)] = official;
  }
  EXPECT_EQ(ours, want) << cfg.type << ": our layer's tensors against the official state dict";
  std::map<std::string, Shape> bound;
  for (const auto& [name, slot] : slots) bound[name] = slot->shape();
  EXPECT_EQ(bound, ours) << cfg.type << ": attention_parameter_slots misses a tensor";
  if (ours != want || bound != ours) return {};
  for (auto& [name, slot] : slots) {
    *slot = f.state(official_of[name]).to(dtype).to(device).detach();
    slot->set_requires_grad(true);
  }
  Tensor x = x64.to(dtype).to(device).detach().set_requires_grad(true);
  Tensor y = layer->forward(x);
  EXPECT_EQ(y.shape(), f["y"].shape()) << cfg.type;
  if (y.shape() != f["y"].shape()) return {};
  ops::sum(y * f["g"].to(dtype).to(device)).backward();
  std::vector<FixtureComparison> out = {{"y", y.detach(), f["y"]}, {"dx", x.grad(), f["dx"]}};
  for (auto& [name, slot] : slots) {
    EXPECT_TRUE(slot->grad().defined()) << cfg.type << ": no gradient for " << name;
    if (slot->grad().defined())
      out.push_back({"grad." + official_of[name], slot->grad(), f["grad." + official_of[name]]});
  }
  return out;
}

/// Every comparison within rel_tol · max|fixture value| (per tensor); prints the errors, the largest first.
inline void expect_fixture_match(const std::vector<FixtureComparison>& cmp, double rel_tol, const std::string& what) {
  ASSERT_FALSE(cmp.empty()) << what;
  double worst_abs = 0, worst_rel = 0;
  for (const FixtureComparison& c : cmp) {
    const double scale = c.max_abs_want(), err = c.max_abs_err();
    ASSERT_GT(scale, 0) << what << " " << c.name << ": the fixture's values are all 0";
    EXPECT_LE(err, rel_tol * scale) << what << " " << c.name << ": max |ours - official| " << err << ", max |official| "
                                    << scale;
    worst_abs = std::max(worst_abs, err), worst_rel = std::max(worst_rel, err / scale);
  }
  std::printf("[official %s] %zu tensors: max abs error %.3g, max error / max|official| %.3g (tolerance %.3g)\n",
              what.c_str(), cmp.size(), worst_abs, worst_rel, rel_tol);
}

}  // namespace vt::test
