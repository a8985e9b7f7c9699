// Optimizers, weight-decay groups, LR schedule and gradient clipping, each against a scalar loop of the
// formulas torch/timm document (written out here independently of src/optim).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "optim/adamw.h"
#include "optim/flat_buffers.h"
#include "optim/lr_schedule.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"
#include "test_util.h"

namespace vt::optim {
namespace {

Tensor make_param(const std::vector<double>& v, Shape shape = {}, DType dtype = DType::f32) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor p = Tensor::from_vector(v, shape, dtype);
  p.set_requires_grad(true);
  return p;
}

void give_grad(Tensor p, const std::vector<double>& g) { p.set_grad(Tensor::from_vector(g, p.shape(), p.dtype())); }

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double rel, const char* what,
                     double abs = 1e-7) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], abs + rel * std::abs(want[i])) << what << " element " << i;
}

// torch.optim.AdamW, one parameter element, in double.
struct AdamRef {
  double p, m = 0, v = 0;
  int t = 0;
  void step(double g, double lr, double wd, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8) {
    ++t;
    p *= 1 - lr * wd;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double m_hat = m / (1 - std::pow(b1, t));
    const double v_hat = v / (1 - std::pow(b2, t));
    p -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
};

TEST(AdamW, ThreeStepsMatchScalarLoop) {
  // Tiny gradients (1e-6) make the eps placement visible; a zero gradient must leave only the decay.
  const std::vector<double> p0 = {0.5, -1.25, 2.0, 0.0, 3.5, -0.75, 0.125};
  const std::vector<std::vector<double>> grads = {{0.1, -0.2, 1e-6, 0.0, 3.0, -1e-6, 0.5},
                                                  {-0.3, 0.25, 2e-6, 0.0, -2.0, 1e-6, 0.5},
                                                  {0.05, -0.5, -1e-6, 0.0, 1.0, 3e-6, -0.5}};
  const std::vector<double> lrs = {1e-2, 5e-3, 2e-2};  // the optimizer must read lr at every step
  const double wd = 0.05;
  Tensor p = make_param(p0);
  AdamW opt({{{p}, wd}}, lrs[0]);
  std::vector<AdamRef> ref;
  for (double x : p0) ref.push_back({x});
  for (int s = 0; s < 3; ++s) {
    opt.lr = lrs[s];
    give_grad(p, grads[s]);
    opt.step();
    std::vector<double> want, m, v;
    for (size_t i = 0; i < ref.size(); ++i) {
      ref[i].step(grads[s][i], lrs[s], wd);
      want.push_back(ref[i].p);
      m.push_back(ref[i].m);
      v.push_back(ref[i].v);
    }
    expect_near_all(p.to_vector(), want, 1e-6, "param");
    auto st = opt.state();
    for (auto& [name, t] : st) {
      if (name == "param.0.exp_avg") expect_near_all(t.to_vector(), m, 1e-6, "exp_avg");
      if (name == "param.0.exp_avg_sq") expect_near_all(t.to_vector(), v, 1e-6, "exp_avg_sq");
    }
  }
  EXPECT_EQ(opt.step_count(), 3);
}

TEST(AdamW, CustomBetasAndEpsMatchScalarLoop) {
  Tensor p = make_param({1.0, -2.0, 0.5}, {3}, DType::f64);
  const double b1 = 0.8, b2 = 0.95, eps = 1e-3;
  AdamW opt({{{p}, 0.1}}, 0.1, b1, b2, eps);
  std::vector<AdamRef> ref = {{1.0}, {-2.0}, {0.5}};
  for (int s = 0; s < 4; ++s) {
    std::vector<double> g = {0.3 * (s + 1), -0.01, 1e-4 * s};
    give_grad(p, g);
    opt.step();
    std::vector<double> want;
    for (size_t i = 0; i < 3; ++i) {
      ref[i].step(g[i], 0.1, 0.1, b1, b2, eps);
      want.push_back(ref[i].p);
    }
    expect_near_all(p.to_vector(), want, 1e-12, "f64 param");
  }
}

TEST(AdamW, NoDecayGroupIsNotDecayedAndGradlessParamsAreSkipped) {
  // Zero gradients: Adam's step is 0/(0+eps) = 0, so only the decoupled decay can move a parameter.
  Tensor w = make_param({1.0, -2.0, 4.0}), b = make_param({1.0, -2.0, 4.0}), frozen = make_param({3.0});
  give_grad(w, {0, 0, 0});
  give_grad(b, {0, 0, 0});
  AdamW opt({{{b, frozen}, 0.0}, {{w}, 0.1}}, 0.01);
  for (int s = 0; s < 3; ++s) opt.step();
  const double f = std::pow(1 - 0.01 * 0.1, 3);
  expect_near_all(w.to_vector(), {1.0 * f, -2.0 * f, 4.0 * f}, 1e-6, "decayed");
  EXPECT_EQ(b.to_vector(), (std::vector<double>{1.0, -2.0, 4.0}));
  EXPECT_EQ(frozen.to_vector(), (std::vector<double>{3.0}));
  for (auto& [name, t] : opt.state()) EXPECT_EQ(name.rfind("param.1.", 0), std::string::npos) << name;
}

TEST(AdamW, MinimisesAQuadraticThroughAutograd) {
  Tensor p = make_param({3.0, -1.0, 0.5, 2.0, -4.0});
  Tensor target = Tensor::from_vector({1.0, 2.0, -1.0, 0.0, 0.5}, {5});
  AdamW opt({{{p}, 0.0}}, 0.1);
  for (int s = 0; s < 300; ++s) {
    opt.zero_grad();
    Tensor loss = ops::sum(ops::square(p - target));
    loss.backward();
    opt.step();
  }
  expect_near_all(p.to_vector(), target.to_vector(), 0.0, "converged", 1e-3);
}

TEST(AdamW, RejectsBadGradientsAndOptions) {
  Tensor p = make_param({1.0, 2.0});
  p.set_grad(Tensor::zeros({3}));
  AdamW opt({{{p}, 0.0}}, 0.1);
  try {
    opt.step();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[adamw]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(AdamW({{{p}, 0.0}}, 0.1, 1.0), Error);
  EXPECT_THROW(AdamW({{{p}, -1.0}}, 0.1), Error);
}

// torch.optim.SGD with dampening 0, one element.
struct SgdRef {
  double p, buf = 0;
  bool has_buf = false;
  void step(double g, double lr, double wd, double momentum, bool nesterov) {
    double d = g + wd * p;
    if (momentum != 0) {
      buf = has_buf ? momentum * buf + d : d;
      has_buf = true;
      d = nesterov ? d + momentum * buf : buf;
    }
    p -= lr * d;
  }
};

void check_sgd(double momentum, bool nesterov) {
  SCOPED_TRACE(::testing::Message() << "momentum " << momentum << " nesterov " << nesterov);
  const std::vector<double> p0 = {0.5, -1.5, 2.0, 0.0, 1.0};
  Tensor p = make_param(p0);
  SGD opt({{{p}, 0.01}}, 0.1, momentum, nesterov);
  std::vector<SgdRef> ref;
  for (double x : p0) ref.push_back({x});
  for (int s = 0; s < 3; ++s) {
    std::vector<double> g = {0.2 * s - 0.1, 1.0, -0.5 * s, 0.0, 0.3};
    give_grad(p, g);
    opt.step();
    std::vector<double> want;
    for (size_t i = 0; i < ref.size(); ++i) {
      ref[i].step(g[i], 0.1, 0.01, momentum, nesterov);
      want.push_back(ref[i].p);
    }
    expect_near_all(p.to_vector(), want, 1e-6, "sgd param");
  }
  bool has_buffer = false;
  for (auto& [name, t] : opt.state()) has_buffer = has_buffer || name == "param.0.momentum_buffer";
  EXPECT_EQ(has_buffer, momentum > 0);
}

TEST(SGD, PlainMomentumAndNesterovMatchScalarLoop) {
  check_sgd(0.0, false);
  check_sgd(0.9, false);
  check_sgd(0.9, true);
  Tensor p = make_param({1.0});
  EXPECT_THROW(SGD({{{p}, 0.0}}, 0.1, 0.0, true), Error);
}

TEST(Optimizer, ZeroGradDropsOrZeroFills) {
  Tensor p = make_param({1.0, 2.0});
  give_grad(p, {3.0, 4.0});
  SGD opt({{{p}, 0.0}}, 0.1);
  Tensor before = p.grad();
  opt.zero_grad(false);
  ASSERT_TRUE(p.grad().defined());
  EXPECT_TRUE(p.grad().same(before));  // same memory: views into a flat buffer stay valid
  EXPECT_EQ(p.grad().to_vector(), (std::vector<double>{0.0, 0.0}));
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
}

TEST(Optimizer, AdamWStateRoundTripResumesBitExactly) {
  auto grad_at = [](int s) { return std::vector<double>{0.1 * s - 0.2, 1.0 / (s + 1), -0.3, 0.7 * s}; };
  Tensor a = make_param({0.5, -1.0, 2.0, 0.25}, {2, 2}), a_bias = make_param({0.1, 0.2});
  AdamW opt_a({{{a_bias}, 0.0}, {{a}, 0.05}}, 1e-2);
  for (int s = 0; s < 2; ++s) {
    give_grad(a, grad_at(s));
    give_grad(a_bias, {0.5, -0.5});
    opt_a.step();
  }
  NamedTensors saved = opt_a.state();
  std::vector<std::string> names;
  for (auto& [n, t] : saved) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"step", "lr", "param.0.step", "param.0.exp_avg", "param.0.exp_avg_sq",
                                             "param.1.step", "param.1.exp_avg", "param.1.exp_avg_sq"}));
  EXPECT_EQ(saved[0].second.item(), 2.0);
  EXPECT_EQ(saved[2].second.item(), 2.0);

  // A fresh optimizer over copies of the parameters, restored from the snapshot.
  Tensor b = a.detach().clone().set_requires_grad(true), b_bias = a_bias.detach().clone().set_requires_grad(true);
  AdamW opt_b({{{b_bias}, 0.0}, {{b}, 0.05}}, 123.0);
  opt_b.load_state(saved);
  EXPECT_EQ(opt_b.lr, 1e-2);
  EXPECT_EQ(opt_b.step_count(), 2);
  for (int s = 2; s < 4; ++s) {
    give_grad(a, grad_at(s));
    give_grad(b, grad_at(s));
    give_grad(a_bias, {0.5, -0.5});
    give_grad(b_bias, {0.5, -0.5});
    opt_a.step();
    opt_b.step();
  }
  EXPECT_EQ(a.to_vector(), b.to_vector());
  EXPECT_EQ(a_bias.to_vector(), b_bias.to_vector());
  // The snapshot is a copy: later steps did not change it.
  EXPECT_EQ(saved[0].second.item(), 2.0);
  EXPECT_NE(saved[3].second.to_vector(), opt_a.state()[3].second.to_vector());
}

TEST(Optimizer, SGDMomentumStateRoundTrip) {
  Tensor a = make_param({1.0, 2.0, 3.0});
  SGD opt_a({{{a}, 0.0}}, 0.1, 0.9, true);
  give_grad(a, {1.0, -1.0, 0.5});
  opt_a.step();
  Tensor b = a.detach().clone().set_requires_grad(true);
  SGD opt_b({{{b}, 0.0}}, 0.1, 0.9, true);
  opt_b.load_state(opt_a.state());
  give_grad(a, {0.2, 0.3, 0.4});
  give_grad(b, {0.2, 0.3, 0.4});
  opt_a.step();
  opt_b.step();
  EXPECT_EQ(a.to_vector(), b.to_vector());
}

TEST(Optimizer, LoadStateRejectsMismatchesNamingTheKey) {
  Tensor p = make_param({1.0, 2.0});
  AdamW opt({{{p}, 0.0}}, 0.1);
  auto expect_error = [&](const NamedTensors& s, const std::string& fragment) {
    try {
      opt.load_state(s);
      ADD_FAILURE() << "expected an error mentioning " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[load_state]"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error({{"momentum", Tensor::zeros({2})}}, "'momentum'");
  expect_error({{"param.0.momentum_buffer", Tensor::zeros({2})}}, "param.0.momentum_buffer");
  expect_error({{"param.3.exp_avg", Tensor::zeros({2})}}, "param.3.exp_avg");
  expect_error({{"param.0.exp_avg", Tensor::zeros({3})}}, "f32[3]");
  expect_error({{"param.x.exp_avg", Tensor::zeros({2})}}, "param.x.exp_avg");
  expect_error({{"param.0.exp_avg", Tensor::zeros({2})}}, "'param.0.step'");
  // A failed load leaves the optimizer as it was.
  EXPECT_EQ(opt.step_count(), 0);
  EXPECT_EQ(opt.state().size(), 2u);
}

TEST(ParamGroups, TimmWeightDecaySplit) {
  auto p = [](Shape s, bool rg = true) {
    Tensor t = Tensor::zeros(s);
    t.set_requires_grad(rg);
    return t;
  };
  std::vector<std::pair<std::string, Tensor>> named = {
      {"cls_token", p({1, 1, 8})},
      {"pos_embed", p({1, 5, 8})},
      {"dist_token", p({1, 1, 8})},
      {"reg_token", p({1, 4, 8})},
      {"patch_embed.proj.weight", p({8, 3, 4, 4})},
      {"patch_embed.proj.bias", p({8})},
      {"blocks.0.norm1.weight", p({8})},
      {"blocks.0.norm1.bias", p({8})},
      {"blocks.0.attn.qkv.weight", p({24, 8})},
      {"blocks.0.attn.qkv.bias", p({24})},
      {"blocks.0.attn.pos_embed_proj.weight", p({8, 8})},  // only a whole name component is a token
      {"blocks.0.attn.bias_table", p({5, 3})},             // ".bias" must be a suffix, not a prefix
      {"backbone.pos_embed", p({1, 5, 8})},
      {"head.weight", p({10, 8})},
      {"head.bias", p({10})},
      {"frozen.weight", p({4, 4}, false)},
  };
  auto groups = make_param_groups(named, 0.05);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].weight_decay, 0.0);
  EXPECT_EQ(groups[1].weight_decay, 0.05);
  auto in_group = [&](const std::string& name, int g) {
    for (auto& [n, t] : named)
      if (n == name)
        for (auto& q : groups[g].params)
          if (q.same(t)) return true;
    return false;
  };
  for (const char* n :
       {"cls_token", "pos_embed", "dist_token", "reg_token", "patch_embed.proj.bias", "blocks.0.norm1.weight",
        "blocks.0.norm1.bias", "blocks.0.attn.qkv.bias", "backbone.pos_embed", "head.bias"})
    EXPECT_TRUE(in_group(n, 0) && !in_group(n, 1)) << n << " should not be decayed";
  for (const char* n : {"patch_embed.proj.weight", "blocks.0.attn.qkv.weight", "blocks.0.attn.pos_embed_proj.weight",
                        "blocks.0.attn.bias_table", "head.weight"})
    EXPECT_TRUE(in_group(n, 1) && !in_group(n, 0)) << n << " should be decayed";
  EXPECT_FALSE(in_group("frozen.weight", 0) || in_group("frozen.weight", 1));
  EXPECT_EQ(groups[0].params.size() + groups[1].params.size(), named.size() - 1);
}

TEST(LrSchedule, WarmupThenCosine) {
  const double base = 1e-3, min_lr = 1e-5, warm = 1e-6;
  LrSchedule s(base, warm, min_lr, 5, 105);
  EXPECT_DOUBLE_EQ(s.lr_at(0), warm);
  EXPECT_DOUBLE_EQ(s.lr_at(2), warm + 2 * (base - warm) / 5);
  EXPECT_DOUBLE_EQ(s.lr_at(5), base);                    // end of warmup
  EXPECT_DOUBLE_EQ(s.lr_at(55), 0.5 * (base + min_lr));  // midpoint of the cosine (t = 50 of 100)
  EXPECT_DOUBLE_EQ(s.lr_at(30), min_lr + 0.5 * (base - min_lr) * (1 + std::sqrt(0.5)));  // t = T/4
  EXPECT_DOUBLE_EQ(s.lr_at(105), min_lr);
  EXPECT_DOUBLE_EQ(s.lr_at(1000), min_lr);
  for (int64_t t = 6; t <= 105; ++t) EXPECT_LE(s.lr_at(t), s.lr_at(t - 1)) << t;
  for (int64_t t = 1; t <= 5; ++t) EXPECT_GT(s.lr_at(t), s.lr_at(t - 1)) << t;

  LrSchedule no_warmup(0.1, 0.0, 0.0, 0, 10);
  EXPECT_DOUBLE_EQ(no_warmup.lr_at(0), 0.1);
  EXPECT_NEAR(no_warmup.lr_at(5), 0.05, 1e-15);
  EXPECT_NEAR(no_warmup.lr_at(9), 0.05 * (1 + std::cos(std::numbers::pi * 0.9)), 1e-15);
  EXPECT_EQ(no_warmup.lr_at(10), 0.0);
  EXPECT_THROW(LrSchedule(0.1, 0.0, 0.0, 5, 5), Error);
  EXPECT_THROW(no_warmup.lr_at(-1), Error);
}

TEST(PolySchedule, SegmenterPolynomialDecayPerIteration) {
  // Segmenter's recipe: base 1e-3, min 1e-5, power 0.9, no warmup; values computed by hand (Python).
  const PolySchedule s{1e-3, 0.0, 1e-5, 0.9, 0.0, 100.0};
  EXPECT_DOUBLE_EQ(s.at(0), 1e-3);
  EXPECT_NEAR(s.at(25), 0.0007741706116563348, 1e-15);  // 0.99e-3 · 0.75^0.9 + 1e-5
  EXPECT_NEAR(s.at(50), 0.0005405278639554652, 1e-15);  // 0.99e-3 · 0.5^0.9 + 1e-5
  EXPECT_DOUBLE_EQ(s.at(100), 1e-5);
  EXPECT_DOUBLE_EQ(s.at(1000), 1e-5);
  for (int t = 1; t <= 100; ++t) EXPECT_LT(s.at(t), s.at(t - 1)) << t;
  const PolySchedule squared{0.9, 0.0, 0.0, 2.0, 0.0, 4.0};
  EXPECT_NEAR(squared.at(1), 0.50625, 1e-15);  // 0.9 · 0.75²
  // A warmup prefix, as the cosine schedule's: linear to base over 10, then the decay over the remaining 100.
  const PolySchedule warm{1e-3, 0.0, 1e-5, 0.9, 10.0, 110.0};
  EXPECT_DOUBLE_EQ(warm.at(5), 5e-4);
  EXPECT_DOUBLE_EQ(warm.at(10), 1e-3);
  EXPECT_NEAR(warm.at(60), 0.0005405278639554652, 1e-15);
  EXPECT_THROW((void)s.at(-1), Error);
  EXPECT_THROW((void)(PolySchedule{1e-3, 0.0, 0.0, 0.9, 5.0, 5.0}.at(1)), Error);
  EXPECT_THROW((void)(PolySchedule{1e-3, 0.0, 0.0, 0.0, 0.0, 5.0}.at(1)), Error);
}

TEST(ClipGradNorm, ScalesByGlobalNormAndReturnsIt) {
  Tensor a = make_param({0, 0}), b = make_param({0}), none = make_param({5.0});
  give_grad(a, {3.0, 4.0});
  give_grad(b, {12.0});
  EXPECT_NEAR(clip_grad_norm({a, b, none}, 100.0), 13.0, 1e-6);
  EXPECT_EQ(a.grad().to_vector(), (std::vector<double>{3.0, 4.0}));  // under the limit: untouched
  EXPECT_NEAR(clip_grad_norm({a, b, none}, 6.5), 13.0, 1e-6);
  const double c = 6.5 / (13.0 + 1e-6);
  expect_near_all(a.grad().to_vector(), {3 * c, 4 * c}, 1e-6, "a");
  expect_near_all(b.grad().to_vector(), {12 * c}, 1e-6, "b");
  EXPECT_FALSE(none.grad().defined());
  std::vector<ParamGroup> groups = {{{a}, 0.0}, {{b}, 0.1}};
  EXPECT_NEAR(clip_grad_norm(groups, 1.0), 6.5, 1e-5);
  NamedTensors named = {{"a", a}, {"b", b}};
  EXPECT_NEAR(clip_grad_norm(named, 0.5), 1.0, 1e-5);
  EXPECT_NEAR(clip_grad_norm(named, 10.0), 0.5, 1e-5);  // the clipped norm
  EXPECT_THROW(clip_grad_norm(std::vector<Tensor>{a}, 0.0), Error);
}

// ---- flat buffers (CPU opt-in; always on for CUDA parameters) ----

// Parameters of odd sizes in two groups; `seed` varies the values.
std::vector<Tensor> odd_params(double seed) {
  std::vector<Tensor> ps;
  const std::vector<Shape> shapes = {{5}, {3, 7}, {1}, {2, 3, 5}};
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<double> v(static_cast<size_t>(numel(shapes[k])));
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(seed + 1.7 * double(k) + 0.37 * double(i));
    ps.push_back(make_param(v, shapes[k]));
  }
  return ps;
}

std::vector<ParamGroup> two_groups(const std::vector<Tensor>& ps) {
  return {{{ps[0], ps[2]}, 0.0}, {{ps[1], ps[3]}, 0.05}};
}

std::vector<double> grad_values(const Tensor& p, int step) {
  std::vector<double> g(static_cast<size_t>(p.numel()));
  for (size_t i = 0; i < g.size(); ++i) g[i] = std::cos(0.9 * step + 0.53 * double(i) + double(p.numel()));
  return g;
}

TEST(FlatBuffers, RepointsParametersAndGradientsIntoAlignedSlices) {
  std::vector<Tensor> ps = odd_params(0.0);
  std::vector<std::vector<double>> before;
  for (auto& p : ps) before.push_back(p.to_vector());
  give_grad(ps[1], grad_values(ps[1], 0));
  Tensor alias = ps[3];  // another handle of the same parameter (as a module holds it)
  AdamW opt(two_groups(ps), 0.1);
  opt.use_flat_buffers();
  const FlatBuffers* flat = opt.flat();
  ASSERT_NE(flat, nullptr);
  // Group order: {ps0, ps2} then {ps1, ps3}, each starting on a multiple of kAlign.
  EXPECT_EQ(flat->offset(0), 0);
  EXPECT_EQ(flat->offset(1), 16);
  EXPECT_EQ(flat->offset(2), 32);
  EXPECT_EQ(flat->offset(3), 64);
  EXPECT_EQ(flat->size(), 96);
  EXPECT_EQ(flat->group_ends(), (std::vector<std::pair<int64_t, double>>{{32, 0.0}, {96, 0.05}}));
  const float* base = flat->params().data<float>();
  const std::vector<size_t> order = {0, 2, 1, 3};
  for (size_t k = 0; k < order.size(); ++k) {
    const Tensor& p = ps[order[k]];
    EXPECT_EQ(p.to_vector(), before[order[k]]) << "values kept";
    EXPECT_EQ(p.data<float>(), base + flat->offset(int64_t(k)));
    EXPECT_EQ(p.grad().data<float>(), flat->grads().data<float>() + flat->offset(int64_t(k)));
  }
  EXPECT_EQ(alias.data<float>(), ps[3].data<float>());
  expect_near_all(ps[1].grad().to_vector(), grad_values(ps[1], 0), 1e-6, "existing gradient kept");
  for (double v : flat->params().to_vector()) EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(flat->params().to_vector()[5], 0.0) << "padding is zero";
  EXPECT_NO_THROW(opt.use_flat_buffers()) << "already flat: a no-op";
}

TEST(FlatBuffers, BackwardAccumulatesIntoTheFlatBufferAndZeroGradKeepsViews) {
  std::vector<Tensor> ps = odd_params(1.0);
  SGD opt(two_groups(ps), 0.1);
  opt.use_flat_buffers();
  Tensor x = Tensor::from_vector(grad_values(ps[1], 3), ps[1].shape());
  for (int pass = 0; pass < 2; ++pass) {  // two backward passes accumulate
    Tensor loss = ops::sum(ops::mul(ps[1], x));
    loss.backward();
  }
  const float* grad_base = opt.flat()->grads().data<float>();
  EXPECT_EQ(ps[1].grad().data<float>(), grad_base + opt.flat()->offset(2));
  std::vector<double> twice;
  for (double v : x.to_vector()) twice.push_back(2 * v);
  expect_near_all(ps[1].grad().to_vector(), twice, 1e-6, "accumulated in place");
  opt.zero_grad();  // set_to_none is ignored with flat buffers: one fill, views stay
  for (double v : opt.flat()->grads().to_vector()) EXPECT_EQ(v, 0.0);
  for (auto& p : ps) EXPECT_TRUE(p.grad().defined());
  EXPECT_EQ(ps[1].grad().data<float>(), grad_base + opt.flat()->offset(2));
}

TEST(FlatBuffers, ReplacedOrDroppedGradientsAreCopiedBackBeforeAStep) {
  std::vector<Tensor> ps = odd_params(2.0);
  SGD opt(two_groups(ps), 0.5);
  opt.use_flat_buffers();
  const std::vector<double> p3 = ps[3].to_vector(), p0 = ps[0].to_vector();
  give_grad(ps[3], grad_values(ps[3], 1));  // replaces the view
  ps[0].set_grad(Tensor());                 // dropped: counts as zero
  opt.step();
  const float* grad_base = opt.flat()->grads().data<float>();
  EXPECT_EQ(ps[3].grad().data<float>(), grad_base + opt.flat()->offset(3));
  std::vector<double> want;
  const std::vector<double> g = grad_values(ps[3], 1);
  for (size_t i = 0; i < p3.size(); ++i) want.push_back(p3[i] - 0.5 * (g[i] + 0.05 * p3[i]));
  expect_near_all(ps[3].to_vector(), want, 1e-6, "sgd with the replaced gradient");
  EXPECT_EQ(ps[0].to_vector(), p0);
}

// Same updates as the per-tensor path (same double arithmetic per element: bit-exact).
template <class MakeOpt>
void expect_flat_matches_per_tensor(MakeOpt make_opt) {
  std::vector<Tensor> a = odd_params(3.0), b = odd_params(3.0);
  auto opt_a = make_opt(two_groups(a));
  auto opt_b = make_opt(two_groups(b));
  opt_b->use_flat_buffers();
  for (int s = 0; s < 4; ++s) {
    opt_b->zero_grad();
    for (size_t k = 0; k < a.size(); ++k) {
      give_grad(a[k], grad_values(a[k], s));
      b[k].grad().copy_(Tensor::from_vector(grad_values(b[k], s), b[k].shape()));
    }
    opt_a->lr = opt_b->lr = 0.01 * (s + 1);
    opt_a->step();
    opt_b->step();
    for (size_t k = 0; k < a.size(); ++k)
      EXPECT_EQ(a[k].to_vector(), b[k].to_vector()) << "param " << k << " step " << s;
  }
  NamedTensors sa = opt_a->state(), sb = opt_b->state();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    EXPECT_EQ(sa[i].second.to_vector(), sb[i].second.to_vector()) << sa[i].first;
  }
}

TEST(FlatBuffers, AdamWAndSGDMatchThePerTensorPathExactly) {
  expect_flat_matches_per_tensor([](std::vector<ParamGroup> g) { return std::make_unique<AdamW>(g, 0.01); });
  expect_flat_matches_per_tensor([](std::vector<ParamGroup> g) { return std::make_unique<SGD>(g, 0.01); });
  expect_flat_matches_per_tensor([](std::vector<ParamGroup> g) { return std::make_unique<SGD>(g, 0.01, 0.9); });
  expect_flat_matches_per_tensor([](std::vector<ParamGroup> g) { return std::make_unique<SGD>(g, 0.01, 0.9, true); });
}

TEST(FlatBuffers, StateMovesBetweenFlatAndPerTensorOptimizers) {
  std::vector<Tensor> a = odd_params(4.0), b = odd_params(4.0), c = odd_params(4.0);
  AdamW opt_a(two_groups(a), 0.02), opt_b(two_groups(b), 0.02), opt_c(two_groups(c), 0.02);
  opt_b.use_flat_buffers();
  for (size_t k = 0; k < a.size(); ++k) give_grad(a[k], grad_values(a[k], 0));
  opt_a.step();
  opt_b.load_state(opt_a.state());  // per-tensor -> flat
  for (size_t k = 0; k < a.size(); ++k) b[k].detach().copy_(a[k]);
  EXPECT_EQ(opt_b.step_count(), 1);
  for (size_t k = 0; k < a.size(); ++k) {
    give_grad(a[k], grad_values(a[k], 1));
    b[k].grad().copy_(a[k].grad());
  }
  opt_a.step();
  opt_b.step();
  for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].to_vector(), b[k].to_vector()) << k;
  opt_c.load_state(opt_b.state());  // flat -> per-tensor
  NamedTensors sa = opt_a.state(), sc = opt_c.state();
  ASSERT_EQ(sa.size(), sc.size());
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(sa[i].second.to_vector(), sc[i].second.to_vector()) << sa[i].first;

  // Flat buffers keep one step count: per-parameter counts that differ are refused.
  NamedTensors uneven = opt_a.state();
  for (auto& [name, t] : uneven)
    if (name == "param.2.step") t = Tensor::scalar(7, DType::i64);
  EXPECT_NE(vt::test::error_of([&] { opt_b.load_state(uneven); }).find("one step count"), std::string::npos);
}

TEST(FlatBuffers, RejectsMixedDtypesAndDuplicates) {
  Tensor a = make_param({1.0, 2.0}), b = make_param({1.0}, {1}, DType::f64);
  AdamW mixed({{{a, b}, 0.0}}, 0.1);
  EXPECT_NE(vt::test::error_of([&] { mixed.use_flat_buffers(); }).find("one dtype"), std::string::npos);
  AdamW twice({{{a}, 0.0}, {{a}, 0.1}}, 0.1);
  EXPECT_NE(vt::test::error_of([&] { twice.use_flat_buffers(); }).find("twice"), std::string::npos);
  give_grad(a, {1.0, 1.0});
  AdamW stepped({{{a}, 0.0}}, 0.1);
  stepped.step();
  EXPECT_NE(vt::test::error_of([&] { stepped.use_flat_buffers(); }).find("before the first step"), std::string::npos);
}

TEST(ClipGradNorm, OptimizerMethodOnTheCpuIsTheFreeFunction) {
  Tensor a = make_param({0, 0}), b = make_param({0});
  give_grad(a, {3.0, 4.0});
  give_grad(b, {12.0});
  SGD opt({{{a}, 0.0}, {{b}, 0.0}}, 0.1);
  Tensor norm = opt.clip_grad_norm(6.5);
  EXPECT_EQ(norm.dim(), 0);
  EXPECT_NEAR(norm.item(), 13.0, 1e-9);
  const double c = 6.5 / (13.0 + 1e-6);
  expect_near_all(a.grad().to_vector(), {3 * c, 4 * c}, 1e-6, "a");
  EXPECT_THROW(opt.clip_grad_norm(0.0), Error);
}

}  // namespace
}  // namespace vt::optim
