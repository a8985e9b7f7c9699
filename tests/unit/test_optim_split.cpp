// The two halves of an optimizer step (prepare_step on the host, apply_step the update) and the EMA fused into the
// update (ModelEma::fuse_into, Optimizer::set_ema), on the CPU: both must be bit-identical to step() and to
// ModelEma::update(), since the fused CPU loop does the same f32 operations in the same order (see optim/fused_ema.h;
// Release builds target x86-64-v2, which has no FMA to contract them).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "engine/ema.h"
#include "nn/module.h"
#include "optim/adamw.h"
#include "optim/flat_buffers.h"
#include "optim/sgd.h"
#include "test_util.h"

namespace vt::optim {
namespace {

using MakeOpt = std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroup>)>;

// Odd sizes, two groups registered out of flat order, and one buffer (which the fused EMA leaves to update()).
class TinyNet : public nn::Module {
 public:
  explicit TinyNet(double seed) {
    w1 = register_parameter("w1", values({3, 7}, seed));
    b1 = register_parameter("b1", values({5}, seed + 1));
    scale = register_parameter("scale", values({1}, seed + 2));
    w2 = register_parameter("w2", values({2, 3, 5}, seed + 3));
    running = register_buffer("running", values({4}, seed + 4));
  }
  std::vector<ParamGroup> groups() const { return {{{b1, scale}, 0.0}, {{w1, w2}, 0.05}}; }
  std::vector<Tensor> params() const { return {w1, b1, scale, w2}; }

  Tensor w1, b1, scale, w2, running;

 private:
  static Tensor values(const Shape& shape, double seed) {
    std::vector<double> v(static_cast<size_t>(numel(shape)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(seed + 0.37 * double(i));
    Tensor t = Tensor::from_vector(v, shape);
    t.set_requires_grad(true);
    return t;
  }
};

// Step `step`'s gradients, written into the existing gradient (a flat view) or set as new tensors.
void give_grads(const TinyNet& net, int step) {
  for (Tensor p : net.params()) {
    std::vector<double> g(static_cast<size_t>(p.numel()));
    for (size_t i = 0; i < g.size(); ++i) g[i] = std::cos(0.9 * step + 0.53 * double(i) + double(p.numel()));
    Tensor t = Tensor::from_vector(g, p.shape());
    if (p.grad().defined()) p.grad().copy_(t);
    else p.set_grad(t);
  }
}

void expect_same_state(const nn::Module& a, const nn::Module& b, const std::string& what) {
  const auto sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i)
    EXPECT_EQ(sa[i].second.to_vector(), sb[i].second.to_vector()) << what << ": " << sa[i].first;
}

void expect_same_optimizer_state(const Optimizer& a, const Optimizer& b) {
  const NamedTensors sa = a.state(), sb = b.state();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    EXPECT_EQ(sa[i].second.to_vector(), sb[i].second.to_vector()) << sa[i].first;
  }
}

const std::vector<std::pair<const char*, MakeOpt>>& optimizers() {
  static const std::vector<std::pair<const char*, MakeOpt>> all = {
      {"adamw", [](std::vector<ParamGroup> g) { return std::make_unique<AdamW>(g, 0.01); }},
      {"sgd", [](std::vector<ParamGroup> g) { return std::make_unique<SGD>(g, 0.01); }},
      {"sgd momentum", [](std::vector<ParamGroup> g) { return std::make_unique<SGD>(g, 0.01, 0.9); }},
      {"sgd nesterov", [](std::vector<ParamGroup> g) { return std::make_unique<SGD>(g, 0.01, 0.9, true); }},
  };
  return all;
}

TEST(OptimizerSplit, PrepareThenApplyIsStepBitForBit) {
  for (const bool flat : {false, true})
    for (const auto& [name, make] : optimizers()) {
      SCOPED_TRACE(::testing::Message() << name << (flat ? " flat" : " per-tensor"));
      TinyNet a(1.0), b(1.0);
      auto opt_a = make(a.groups()), opt_b = make(b.groups());
      if (flat) {
        opt_a->use_flat_buffers();
        opt_b->use_flat_buffers();
      }
      for (int s = 0; s < 4; ++s) {
        give_grads(a, s);
        give_grads(b, s);
        opt_a->lr = opt_b->lr = 0.01 * (s + 1);  // a schedule
        opt_a->step();
        opt_b->prepare_step();
        opt_b->lr = 123.0;  // the prepared step already read its lr
        opt_b->apply_step();
        opt_b->lr = opt_a->lr;
        expect_same_state(a, b, "after step " + std::to_string(s));
      }
      EXPECT_EQ(opt_b->step_count(), 4);
      expect_same_optimizer_state(*opt_a, *opt_b);
    }
}

TEST(OptimizerSplit, ApplyStepNeedsAPreparedStep) {
  TinyNet net(2.0);
  AdamW opt(net.groups(), 0.01);
  give_grads(net, 0);
  EXPECT_NE(vt::test::error_of([&] { opt.apply_step(); }).find("prepare_step"), std::string::npos);
  opt.prepare_step();
  opt.apply_step();
  EXPECT_NE(vt::test::error_of([&] { opt.apply_step(); }).find("prepare_step"), std::string::npos);
}

// N steps of (model, unfused ModelEma) against (model, ModelEma fused into the flat CPU optimizer).
void expect_fused_ema_matches(const MakeOpt& make, bool clip) {
  TinyNet model_a(3.0), model_b(3.0), shadow_a(0.0), shadow_b(0.0);
  auto opt_a = make(model_a.groups()), opt_b = make(model_b.groups());
  opt_a->use_flat_buffers();
  opt_b->use_flat_buffers();
  engine::ModelEma ema_a(model_a, shadow_a, 0.75), ema_b(model_b, shadow_b, 0.75);
  ASSERT_TRUE(ema_b.fuse_into(*opt_b, model_b));
  EXPECT_TRUE(ema_b.fused());
  EXPECT_FALSE(ema_b.fuse_into(*opt_b, model_b)) << "fused once";
  // The shadow's parameters are views of the optimizer's EMA buffer, at the optimizer's offsets.
  const Tensor& buffer = opt_b->fused_ema();
  ASSERT_TRUE(buffer.defined());
  const auto* base = static_cast<const float*>(buffer.raw_data());
  const std::vector<Tensor> model_params = model_b.params(), shadow_params = shadow_b.params();
  for (size_t i = 0; i < model_params.size(); ++i) {
    const int64_t k = opt_b->flat()->index_of(&model_params[i].impl());
    ASSERT_GE(k, 0);
    EXPECT_EQ(static_cast<const float*>(shadow_params[i].raw_data()), base + opt_b->flat()->offset(k));
  }
  expect_same_state(shadow_a, shadow_b, "after fusing");
  for (int s = 0; s < 5; ++s) {
    give_grads(model_a, s);
    give_grads(model_b, s);
    opt_a->lr = opt_b->lr = 0.02 * (s + 1);
    if (clip) {
      opt_a->clip_grad_norm(0.5);
      opt_b->clip_grad_norm(0.5);
    }
    model_a.running.fill_(double(s));  // a buffer changes too: update() still averages it
    model_b.running.fill_(double(s));
    opt_a->step();
    ema_a.update(model_a);
    opt_b->step();
    ema_b.update(model_b);
    expect_same_state(model_a, model_b, "model after step " + std::to_string(s));
    expect_same_state(shadow_a, shadow_b, "EMA after step " + std::to_string(s));
  }
}

TEST(FusedEma, FlatCpuAdamWAndSgdMatchModelEmaBitForBit) {
  for (const auto& [name, make] : optimizers()) {
    SCOPED_TRACE(name);
    expect_fused_ema_matches(make, false);
    expect_fused_ema_matches(make, true);
  }
}

TEST(FusedEma, ShadowStaysAModuleForCheckpointsAndResume) {
  TinyNet model(4.0), shadow(0.0), restored(9.0);
  AdamW opt(model.groups(), 0.01);
  opt.use_flat_buffers();
  engine::ModelEma ema(model, shadow, 0.5);
  ASSERT_TRUE(ema.fuse_into(opt, model));
  give_grads(model, 0);
  opt.step();
  ema.update(model);
  // Saving reads the views; loading writes into them, so the optimizer's update keeps averaging the loaded values.
  restored.load_state_dict(shadow.state_dict());
  expect_same_state(shadow, restored, "saved");
  TinyNet other(5.0);
  shadow.load_state_dict(other.state_dict());
  EXPECT_EQ(shadow.w2.to_vector(), other.w2.to_vector());
  const std::vector<double> w2_before = shadow.w2.to_vector(), p_before = model.w2.to_vector();
  give_grads(model, 1);
  opt.step();
  const std::vector<double> p = model.w2.to_vector(), e = shadow.w2.to_vector();
  for (size_t i = 0; i < e.size(); ++i)
    EXPECT_EQ(e[i], double(float(float(w2_before[i]) * 0.5f) + float(float(p[i]) * 0.5f))) << i;
  EXPECT_NE(p, p_before);
}

TEST(FusedEma, StaysUnfusedWhenNotEligible) {
  {  // per-tensor optimizer (the CPU default)
    TinyNet model(1.0), shadow(0.0);
    AdamW opt(model.groups(), 0.01);
    engine::ModelEma ema(model, shadow, 0.9);
    EXPECT_FALSE(ema.fuse_into(opt, model));
    EXPECT_FALSE(ema.fused());
  }
  {  // ZeRO-1's ranged AdamW; and no range once fused
    TinyNet model(1.0), shadow(0.0);
    AdamW opt(model.groups(), 0.01);
    opt.use_flat_buffers();
    opt.set_flat_range(0, 32);
    EXPECT_FALSE(opt.can_fuse_ema());
    engine::ModelEma ema(model, shadow, 0.9);
    EXPECT_FALSE(ema.fuse_into(opt, model));
    TinyNet model2(1.0), shadow2(0.0);
    AdamW opt2(model2.groups(), 0.01);
    opt2.use_flat_buffers();
    engine::ModelEma ema2(model2, shadow2, 0.9);
    ASSERT_TRUE(ema2.fuse_into(opt2, model2));
    EXPECT_NE(vt::test::error_of([&] { opt2.set_flat_range(0, 32); }).find("fused EMA"), std::string::npos);
  }
  {  // the optimizer holds only some of the model's parameters
    TinyNet model(1.0), shadow(0.0);
    AdamW opt({{{model.w1, model.b1}, 0.0}}, 0.01);
    opt.use_flat_buffers();
    engine::ModelEma ema(model, shadow, 0.9);
    EXPECT_FALSE(ema.fuse_into(opt, model));
    // Unfused, the EMA still works as before.
    give_grads(model, 0);
    opt.step();
    const std::vector<double> before = shadow.w1.to_vector();
    ema.update(model);
    EXPECT_NE(shadow.w1.to_vector(), before);
  }
  {  // a bad EMA buffer is refused by the optimizer
    TinyNet model(1.0);
    SGD opt(model.groups(), 0.01);
    opt.use_flat_buffers();
    EXPECT_THROW(opt.set_ema(Tensor::zeros({3}, DType::f32, cpu()), 0.9), Error);
    EXPECT_THROW(opt.set_ema(opt.flat()->new_buffer(), 1.0), Error);
  }
}

}  // namespace
}  // namespace vt::optim
