// The autocast policy on the CPU: a thread-local switch that nests, is a no-op for CPU tensors (bit-identical
// logits and gradients), and only accepts bf16. Module::to moves parameters in place. (CUDA behaviour:
// tests/cuda/test_autocast_cuda.cpp.)
#include <gtest/gtest.h>

#include "models/registry.h"
#include "models/vit.h"
#include "nn/autocast.h"
#include "ops/ops.h"
#include "test_util.h"

namespace vt::test {
namespace {

models::ViTConfig micro() {
  models::ViTConfig c = models::preset("vit_micro");
  c.embed_dim = 24;
  c.depth = 2;
  c.num_heads = 2;
  return c;
}

struct Outputs {
  std::vector<double> logits, grads;
};

Outputs forward_backward(const models::VisionTransformer& m, const Tensor& x, const Tensor& y, bool autocast) {
  nn::AutocastGuard guard(autocast ? std::optional<DType>(DType::bf16) : std::nullopt);
  for (auto& [name, p] : m.named_parameters()) p.set_grad(Tensor());
  Tensor logits = m.forward(x);
  ops::cross_entropy(logits, y, 0.1).backward();
  Outputs r{logits.to_vector(), {}};
  for (auto& [name, p] : m.named_parameters())
    for (double g : p.grad().to_vector()) r.grads.push_back(g);
  return r;
}

TEST(Autocast, GuardNestsAndRestores) {
  EXPECT_FALSE(nn::autocast_dtype().has_value());
  {
    nn::AutocastGuard on(DType::bf16);
    EXPECT_EQ(nn::autocast_dtype(), DType::bf16);
    {
      nn::AutocastGuard off(std::nullopt);
      EXPECT_FALSE(nn::autocast_dtype().has_value());
    }
    EXPECT_EQ(nn::autocast_dtype(), DType::bf16);
  }
  EXPECT_FALSE(nn::autocast_dtype().has_value());
}

TEST(Autocast, OnlyBf16IsAccepted) {
  EXPECT_CONTAINS(error_of([] { nn::AutocastGuard g(DType::f32); }), "only bf16");
  EXPECT_FALSE(nn::autocast_dtype().has_value());  // a rejected guard changes nothing
}

TEST(Autocast, CpuTensorsIgnoreThePolicy) {
  nn::AutocastGuard on(DType::bf16);
  EXPECT_FALSE(nn::autocast_dtype_for(Tensor::ones({2, 3})).has_value());
  EXPECT_FALSE(nn::autocast_dtype_for(Tensor()).has_value());
}

TEST(Autocast, CpuLogitsAndGradientsAreBitIdentical) {
  models::ViTConfig cfg = micro();
  cfg.drop_path_rate = 0;
  models::VisionTransformer m(cfg);
  Tensor x = Tensor::from_vector(std::vector<double>(2 * 28 * 28, 0.0), {2, 1, 28, 28});
  Generator gen(3);
  ops::normal_(x, 0, 1, gen);
  Tensor y = Tensor::from_vector({3, 7}, {2}, DType::i64);
  const Outputs plain = forward_backward(m, x, y, false), cast = forward_backward(m, x, y, true);
  ASSERT_EQ(plain.logits.size(), cast.logits.size());
  ASSERT_EQ(plain.grads.size(), cast.grads.size());
  EXPECT_EQ(plain.logits, cast.logits);
  EXPECT_EQ(plain.grads, cast.grads);
}

TEST(Autocast, ModuleToKeepsTheHandlesOnTheSameDevice) {
  models::VisionTransformer m(micro());
  Tensor w = m.head->weight;
  const std::vector<double> before = w.to_vector();
  m.to(cpu());
  EXPECT_TRUE(w.same(m.head->weight));
  EXPECT_EQ(w.to_vector(), before);
  EXPECT_TRUE(m.head->weight.requires_grad());
}

}  // namespace
}  // namespace vt::test
