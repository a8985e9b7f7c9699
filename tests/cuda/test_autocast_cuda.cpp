// bf16 autocast and training on the GPU, end to end through the nn modules: Linear's output is bf16 while its f32
// master weight gets an f32 gradient, LayerNorm gives bf16 from an f32 stream, a small ViT matches its CPU f32
// logits to bf16 accuracy and trains, and `vitrain bench`'s engine runs on the device with peak memory.
#include <gtest/gtest.h>

#include <cmath>

#include "device_test_util.h"
#include "autograd/node.h"
#include "engine/bench.h"
#include "engine/device.h"
#include "models/registry.h"
#include "models/vit.h"
#include "nn/autocast.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "optim/adamw.h"
#include "optim/flat_buffers.h"
#include "optim/param_groups.h"

namespace vt::test {
namespace {

models::ViTConfig micro() {
  models::ViTConfig c = models::preset("vit_micro");  // 28x28x1, patch 7: 17 tokens
  c.embed_dim = 24;
  c.depth = 2;
  c.num_heads = 2;
  return c;
}

double finite_max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to(cpu()).to_vector()) {
    if (!std::isfinite(v)) return INFINITY;
    m = std::max(m, std::abs(v));
  }
  return m;
}

TEST(AutocastCuda, AutoDevicePicksTheGpu) {
  VT_REQUIRE_DEVICE();
  EXPECT_TRUE(engine::resolve_device("auto") == kGpu);
  EXPECT_TRUE(engine::resolve_device("cuda") == kGpu);
}

TEST(AutocastCuda, LinearIsBf16WithF32MasterGradients) {
  VT_REQUIRE_DEVICE();
  Generator gen(1);
  nn::Linear lin(37, 19, true, gen);  // odd sizes
  ops::normal_(lin.bias, 0, 0.5, gen);
  const Tensor x_cpu = randn_cpu({5, 37}, 7);
  lin.to(kGpu);
  Tensor y;
  {
    nn::AutocastGuard amp(DType::bf16);
    y = lin.forward(x_cpu.to(kGpu));
  }
  EXPECT_EQ(y.dtype(), DType::bf16);
  ops::sum(y.to(DType::f32)).backward();
  ASSERT_TRUE(lin.weight.grad().defined());
  EXPECT_EQ(lin.weight.grad().dtype(), DType::f32);
  EXPECT_TRUE(lin.weight.grad().device() == kGpu);
  EXPECT_EQ(lin.bias.grad().dtype(), DType::f32);

  // Forward by the bf16 rule: the f64 reference on the unrounded inputs; "plain" = bf16-rounded inputs, f64 math,
  // output rounded to bf16.
  const Tensor w = lin.weight.detach().to(cpu()), b = lin.bias.detach().to(cpu());
  auto r64 = [](const Tensor& t) { return t.to(DType::f64); };
  auto rb = [](const Tensor& t) { return t.to(DType::bf16).to(DType::f64); };
  NoGradGuard no_grad;
  const Tensor ref = ops::linear(r64(x_cpu), r64(w), r64(b));
  const Tensor plain = ops::linear(rb(x_cpu), rb(w), rb(b)).to(DType::bf16);
  expect_bf16_rule(y, plain, ref, "autocast linear forward");
  // dW = column sums of x (dy = 1 exactly): plain = sums of bf16-rounded x, rounded to bf16.
  const Tensor ones = Tensor::ones({5, 19}, DType::f64);
  const Tensor dw_ref = ops::matmul(ones.transpose(0, 1), r64(x_cpu));
  const Tensor dw_plain = ops::matmul(ones.transpose(0, 1), rb(x_cpu)).to(DType::bf16);
  expect_bf16_rule(lin.weight.grad(), dw_plain, dw_ref, "autocast linear weight gradient");
}

// The second backward meets an existing f32 .grad: the weight cast's backward then hands the bf16 gradient on and
// the accumulation converts (one kernel); the sum must be what casting first and adding gives.
TEST(AutocastCuda, Bf16GradientAddsIntoAnExistingF32Grad) {
  VT_REQUIRE_DEVICE();
  Generator gen(2);
  nn::Linear lin(37, 19, true, gen);
  lin.to(kGpu);
  const Tensor x = randn_cpu({5, 37}, 8).to(kGpu);
  auto step = [&] {
    nn::AutocastGuard amp(DType::bf16);
    Tensor y = lin.forward(x);
    ops::sum(y.to(DType::f32) * y.to(DType::f32)).backward();
  };
  step();
  const Tensor first_w = lin.weight.grad().to(cpu()), first_b = lin.bias.grad().to(cpu());
  ASSERT_EQ(first_w.dtype(), DType::f32);
  step();
  EXPECT_EQ(lin.weight.grad().dtype(), DType::f32);
  // Same inputs, same bf16 gradient both times: the f32 sum of two equal bf16-exact values is exact.
  EXPECT_EQ(max_abs_diff(lin.weight.grad().to(cpu()), first_w * 2.0), 0.0);
  EXPECT_EQ(max_abs_diff(lin.bias.grad().to(cpu()), first_b * 2.0), 0.0);
}

// The weight-cast cache: with the parameters in one flat buffer, the first cast converts all of it once and every
// later cast is a view of that copy; values are the plain casts, gradients reach the f32 leaves, and a new guard
// (after the parameters changed) casts afresh.
TEST(AutocastCuda, WeightCastsComeFromOneCastOfTheFlatBuffer) {
  VT_REQUIRE_DEVICE();
  Generator gen(3);
  nn::Linear a(13, 7, true, gen), b(7, 5, true, gen);
  a.to(kGpu);
  b.to(kGpu);
  optim::FlatBuffers flat({optim::ParamGroup{{a.weight, a.bias, b.weight, b.bias}, 0.0}});
  Tensor wa, wb;
  {
    nn::AutocastGuard amp(DType::bf16);
    wa = nn::cast_to(a.weight, DType::bf16);
    wb = nn::cast_to(b.weight, DType::bf16);
    const Tensor again = nn::cast_to(a.weight, DType::bf16);
    EXPECT_EQ(again.raw_data(), wa.raw_data());  // the same cached copy
  }
  EXPECT_EQ(wa.dtype(), DType::bf16);
  // Both views sit in one bf16 copy of the flat buffer, at the parameters' offsets.
  const auto* base = static_cast<const char*>(wa.raw_data()) - 2 * flat.offset(0);
  EXPECT_EQ(static_cast<const char*>(wb.raw_data()), base + 2 * flat.offset(2));
  EXPECT_EQ(max_abs_diff(wa.to(cpu()), a.weight.detach().to(DType::bf16).to(cpu())), 0.0);
  EXPECT_EQ(max_abs_diff(wb.to(cpu()), b.weight.detach().to(DType::bf16).to(cpu())), 0.0);
  ops::sum(wa.to(DType::f32)).backward();
  EXPECT_EQ(max_abs_diff(a.weight.grad().to(cpu()), Tensor::ones({7, 13})), 0.0);
  {
    NoGradGuard no_grad;
    ops::mul_(a.weight, 2.0);
  }
  nn::AutocastGuard amp(DType::bf16);
  EXPECT_EQ(max_abs_diff(nn::cast_to(a.weight, DType::bf16).to(cpu()), a.weight.detach().to(DType::bf16).to(cpu())),
            0.0);
}

TEST(AutocastCuda, LayerNormGivesBf16FromAnF32Stream) {
  VT_REQUIRE_DEVICE();
  nn::LayerNorm ln(45, 1e-6);
  ln.to(kGpu);
  Tensor x = randn_cpu({3, 7, 45}, 11).to(kGpu);
  Tensor y;
  {
    nn::AutocastGuard amp(DType::bf16);
    y = ln.forward(x);
  }
  EXPECT_EQ(y.dtype(), DType::bf16);
  ops::sum(y.to(DType::f32)).backward();
  EXPECT_EQ(ln.weight.grad().dtype(), DType::f32);
  // Normalized values are O(1): bf16 keeps 8 bits, so 1/64 absolute is a loose bound on rounding alone.
  NoGradGuard no_grad;
  const Tensor ref = ops::layer_norm(x.to(cpu()), ln.weight.detach().to(cpu()), ln.bias.detach().to(cpu()), 1e-6);
  EXPECT_LE(max_abs_diff(y.to(DType::f32), ref), 1.0 / 64);
}

TEST(AutocastCuda, ViTMatchesCpuAndKeepsAnF32Stream) {
  VT_REQUIRE_DEVICE();
  models::VisionTransformer cpu_model(micro()), gpu_model(micro());  // same seed: same weights
  gpu_model.to(kGpu);
  const Tensor x = randn_cpu({3, 1, 28, 28}, 5);
  const Tensor y = Tensor::from_vector({1, 4, 9}, {3}, DType::i64);
  cpu_model.eval();
  gpu_model.eval();
  Tensor ref, out;
  {
    NoGradGuard no_grad;
    ref = cpu_model.forward(x);
    nn::AutocastGuard amp(DType::bf16);
    out = gpu_model.forward(x.to(kGpu));
  }
  EXPECT_EQ(out.dtype(), DType::bf16);
  // Two blocks of bf16 GEMMs on O(1) activations: a few bf16 ulps of the logits' scale.
  EXPECT_LE(max_abs_diff(out.to(DType::f32), ref), 0.05 * max_abs(ref) + 0.02);

  gpu_model.train();
  Tensor loss;
  {
    nn::AutocastGuard amp(DType::bf16);
    loss = ops::cross_entropy(gpu_model.forward(x.to(kGpu)), y.to(kGpu), 0.1);
  }
  EXPECT_EQ(loss.dtype(), DType::f32);
  loss.backward();
  for (const auto& [name, p] : gpu_model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().dtype(), DType::f32) << name;
    EXPECT_TRUE(p.grad().device() == kGpu) << name;
    EXPECT_TRUE(std::isfinite(finite_max_abs(p.grad()))) << name;
  }
}

TEST(AutocastCuda, AdamWOnTheGpuFitsAFixedBatch) {
  VT_REQUIRE_DEVICE();
  models::VisionTransformer model(micro());
  model.to(kGpu);
  optim::AdamW opt(optim::make_param_groups(model.named_parameters(), 0.0), 3e-3);
  const Tensor x = randn_cpu({8, 1, 28, 28}, 9).to(kGpu);
  const Tensor y = Tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7}, {8}, DType::i64).to(kGpu);
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    Tensor loss;
    {
      nn::AutocastGuard amp(DType::bf16);
      loss = ops::cross_entropy(model.forward(x), y);
    }
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  EXPECT_LT(last, 0.5 * first) << "30 AdamW steps on one batch of 8 should more than halve the loss";
  for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.device() == kGpu) << name;
}

TEST(AutocastCuda, BenchRunsOnTheGpuWithPeakMemory) {
  VT_REQUIRE_DEVICE();
  engine::BenchOptions o;
  o.model = "vit_micro";
  o.batch_size = 16;
  o.steps = 3;
  o.warmup = 1;
  o.device = "cuda:0";
  o.amp = true;
  o.infer = true;
  const engine::BenchResult r = engine::run_bench(o);
  EXPECT_EQ(r.device, "cuda:0");
  EXPECT_TRUE(r.amp);
  EXPECT_GT(r.train_img_per_s, 0);
  EXPECT_GT(r.infer_img_per_s, 0);
  EXPECT_TRUE(std::isfinite(r.last_loss));
  ASSERT_TRUE(r.train_peak.has_value());
  EXPECT_GT(r.train_peak->allocated, 0u);
  ASSERT_TRUE(r.infer_peak.has_value());
  EXPECT_LE(r.infer_peak->allocated, r.train_peak->allocated);
  EXPECT_NE(engine::bench_json(o, r).find("\"train_peak_mem_gib\":"), std::string::npos);
}

}  // namespace
}  // namespace vt::test
