// The optimizer step split for CUDA graphs and the EMA fused into the update launch, on the GPU:
// - prepare_step() + apply_step() is step() bit for bit (the same kernel reads the same f32 values, now from device
//   memory instead of kernel arguments);
// - apply_step() (with clip_grad_norm() before it) captured once in a CUDA graph and replayed after each
//   prepare_step() gives the eager steps bit for bit while lr and the step count change: its launch arguments do not
//   depend on the step;
// - the fused EMA gives ModelEma::update()'s averages bit for bit: the kernel rounds decay·ema, (1 - decay)·p and
//   their sum once each with __fmul_rn/__fadd_rn (no FMA), exactly the three f32 element-wise kernels of update().
// Tolerance is therefore zero everywhere.
#include <cuda_runtime.h>

#include <cmath>
#include <functional>
#include <memory>

#include "device_test_util.h"
#include "engine/ema.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/stream.h"
#include "nn/module.h"
#include "optim/adamw.h"
#include "optim/flat_buffers.h"
#include "optim/sgd.h"

namespace vt::test {
namespace {

using optim::Optimizer;
using optim::ParamGroup;
using MakeOpt = std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroup>)>;

// Odd sizes in two groups registered out of flat order, and one buffer (left to ModelEma::update()), on the GPU.
class GpuNet : public nn::Module {
 public:
  explicit GpuNet(uint32_t seed) {
    w1 = register_parameter("w1", param({37, 19}, seed));
    b1 = register_parameter("b1", param({19}, seed + 1));
    w2 = register_parameter("w2", param({3, 7, 11}, seed + 2));
    s = register_parameter("s", param({1}, seed + 3));
    w3 = register_parameter("w3", param({5, 4}, seed + 4));
    b3 = register_parameter("b3", param({257}, seed + 5));
    running = register_buffer("running", randn_cpu({6}, seed + 6));
    to(kGpu);
  }
  std::vector<ParamGroup> groups() const { return {{{b1, s, b3}, 0.0}, {{w1, w2, w3}, 0.05}}; }
  std::vector<Tensor> params() const { return {w1, b1, w2, s, w3, b3}; }

  Tensor w1, b1, w2, s, w3, b3, running;

 private:
  static Tensor param(const Shape& shape, uint32_t seed) {
    Tensor t = randn_cpu(shape, seed, DType::f32, 0.5);
    t.set_requires_grad(true);
    return t;
  }
};

// Step `step`'s gradients written into the flat gradient views (the training path).
void give_grads(const GpuNet& net, int step) {
  uint32_t k = 0;
  for (const Tensor& p : net.params()) p.grad().copy_(randn_cpu(p.shape(), 1000u + 17u * uint32_t(step) + k++));
}

void expect_same(const Tensor& a, const Tensor& b, const std::string& what) {
  EXPECT_EQ(a.to(cpu()).to_vector(), b.to(cpu()).to_vector()) << what;
}

void expect_same_modules(const nn::Module& a, const nn::Module& b, const std::string& what) {
  const auto sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) expect_same(sa[i].second, sb[i].second, what + ": " + sa[i].first);
}

void expect_same_optimizers(const Optimizer& a, const Optimizer& b, const std::string& what) {
  const auto sa = a.state(), sb = b.state();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) expect_same(sa[i].second, sb[i].second, what + ": " + sa[i].first);
}

const std::vector<std::pair<const char*, MakeOpt>>& optimizers() {
  static const std::vector<std::pair<const char*, MakeOpt>> all = {
      {"adamw", [](std::vector<ParamGroup> g) { return std::make_unique<optim::AdamW>(g, 1e-2); }},
      {"sgd", [](std::vector<ParamGroup> g) { return std::make_unique<optim::SGD>(g, 0.05); }},
      {"sgd momentum", [](std::vector<ParamGroup> g) { return std::make_unique<optim::SGD>(g, 0.05, 0.9); }},
      {"sgd nesterov", [](std::vector<ParamGroup> g) { return std::make_unique<optim::SGD>(g, 0.05, 0.9, true); }},
  };
  return all;
}

double lr_at(int step) { return 1e-2 * (1.0 + step) / 3.0; }  // a schedule: lr changes every step

TEST(OptimSplitCuda, PrepareThenApplyIsStepBitForBit) {
  VT_REQUIRE_DEVICE();
  for (const auto& [name, make] : optimizers()) {
    SCOPED_TRACE(name);
    GpuNet a(11), b(11);
    auto opt_a = make(a.groups()), opt_b = make(b.groups());
    ASSERT_NE(opt_b->flat(), nullptr);
    for (int s = 0; s < 5; ++s) {
      opt_a->zero_grad();
      opt_b->zero_grad();
      give_grads(a, s);
      give_grads(b, s);
      opt_a->lr = opt_b->lr = lr_at(s);
      if (s % 2 == 0) {  // norms are ~35: max_norm 5 clips
        opt_a->clip_grad_norm(5.0);
        opt_b->clip_grad_norm(5.0);
      }
      opt_a->step();
      opt_b->prepare_step();
      opt_b->lr = 123.0;  // the prepared step already holds its lr
      opt_b->apply_step();
      opt_b->lr = opt_a->lr;  // (state() records lr)
      expect_same_modules(a, b, "step " + std::to_string(s));
    }
    expect_same_optimizers(*opt_a, *opt_b, "state");
  }
}

// Captures `body` on `stream` into an executable graph (not run).
cudaGraphExec_t capture(cudaStream_t stream, const std::function<void()>& body) {
  VT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  body();
  cudaGraph_t graph = nullptr;
  VT_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  VT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  VT_CUDA_CHECK(cudaGraphDestroy(graph));
  return exec;
}

TEST(OptimSplitCuda, CapturedApplyStepReplayedAfterEachPrepareIsTheEagerStep) {
  VT_REQUIRE_DEVICE();
  cudaStream_t stream = nullptr;
  VT_CUDA_CHECK(cudaStreamCreate(&stream));
  for (const auto& [name, make] : optimizers()) {
    SCOPED_TRACE(name);
    kernels::cuda::StreamGuard on_stream(stream);  // everything of both twins on the capturable stream
    GpuNet a(21), b(21);
    auto opt_a = make(a.groups()), opt_b = make(b.groups());
    // Both with a fused EMA too, so its buffer is part of what must stay fixed across replays.
    Tensor ema_a = opt_a->flat()->params().clone(), ema_b = opt_b->flat()->params().clone();
    opt_a->set_ema(ema_a, 0.9);
    opt_b->set_ema(ema_b, 0.9);
    cudaGraphExec_t graph = nullptr;
    for (int s = 0; s < 6; ++s) {
      give_grads(a, s);
      give_grads(b, s);
      opt_a->lr = opt_b->lr = lr_at(s);
      opt_a->clip_grad_norm(5.0);
      opt_a->step();
      opt_b->prepare_step();  // outside the graph, before every replay
      if (s == 0) {           // eager warm-up: state buffers, norm workspace and step values are made here
        opt_b->clip_grad_norm(5.0);
        opt_b->apply_step();
      } else {
        if (!graph)
          graph = capture(stream, [&] {
            opt_b->clip_grad_norm(5.0);
            opt_b->apply_step();
          });
        VT_CUDA_CHECK(cudaGraphLaunch(graph, stream));
      }
      const std::string what = "step " + std::to_string(s);
      expect_same_modules(a, b, what);
      expect_same(ema_a, ema_b, what + " EMA");
    }
    // state() counts steps on the host: the replays' prepare_step() calls counted them.
    expect_same_optimizers(*opt_a, *opt_b, "state");
    VT_CUDA_CHECK(cudaGraphExecDestroy(graph));
  }
  VT_CUDA_CHECK(cudaStreamSynchronize(stream));
  VT_CUDA_CHECK(cudaStreamDestroy(stream));
}

// (model, unfused ModelEma) against (model, ModelEma fused into the optimizer's launch), both on the GPU.
void expect_fused_ema_matches(const MakeOpt& make) {
  GpuNet model_a(31), model_b(31), shadow_a(99), shadow_b(99);
  auto opt_a = make(model_a.groups()), opt_b = make(model_b.groups());
  engine::ModelEma ema_a(model_a, shadow_a, 0.99), ema_b(model_b, shadow_b, 0.99);
  ASSERT_TRUE(ema_b.fuse_into(*opt_b, model_b)) << "flat CUDA buffers over exactly the model's parameters";
  const auto* base = static_cast<const char*>(opt_b->fused_ema().raw_data());
  const std::vector<Tensor> mp = model_b.params(), sp = shadow_b.params();
  for (size_t i = 0; i < mp.size(); ++i) {
    const int64_t k = opt_b->flat()->index_of(&mp[i].impl());
    EXPECT_EQ(static_cast<const char*>(sp[i].raw_data()), base + 4 * opt_b->flat()->offset(k)) << i;
  }
  for (int s = 0; s < 6; ++s) {
    opt_a->zero_grad();
    opt_b->zero_grad();
    give_grads(model_a, s);
    give_grads(model_b, s);
    opt_a->lr = opt_b->lr = lr_at(s);
    if (s % 2 == 1) {
      opt_a->clip_grad_norm(5.0);
      opt_b->clip_grad_norm(5.0);
    }
    model_a.running.fill_(0.5 * s);  // the buffer is still averaged by update()
    model_b.running.fill_(0.5 * s);
    opt_a->step();
    ema_a.update(model_a);
    opt_b->step();
    ema_b.update(model_b);
    const std::string what = "step " + std::to_string(s);
    expect_same_modules(model_a, model_b, what + " model");
    expect_same_modules(shadow_a, shadow_b, what + " EMA");
  }
}

TEST(FusedEmaCuda, AdamWAndSgdUpdatesGiveModelEmaBitForBit) {
  VT_REQUIRE_DEVICE();
  for (const auto& [name, make] : optimizers()) {
    SCOPED_TRACE(name);
    expect_fused_ema_matches(make);
  }
}

TEST(FusedEmaCuda, RangedAdamWStaysUnfused) {
  VT_REQUIRE_DEVICE();
  GpuNet model(41), shadow(42);
  optim::AdamW opt(model.groups(), 1e-2);
  opt.set_flat_range(0, 64);  // ZeRO-1's slice
  engine::ModelEma ema(model, shadow, 0.9);
  EXPECT_FALSE(ema.fuse_into(opt, model));
  give_grads(model, 0);
  opt.step();
  const std::vector<double> before = shadow.w1.to(cpu()).to_vector();
  ema.update(model);  // the unfused path still averages everything
  EXPECT_NE(shadow.w1.to(cpu()).to_vector(), before);
}

}  // namespace
}  // namespace vt::test
