// The ViT: timm parameter names and counts, shapes, train/eval behaviour, state_dict round trips and errors.
#include <gtest/gtest.h>

#include <set>

#include "models/registry.h"
#include "models/vit.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

models::ViTConfig micro() {
  models::ViTConfig c = models::preset("vit_micro");
  c.embed_dim = 24;
  c.depth = 2;
  c.num_heads = 2;
  return c;
}

TEST(ViT, DeiTParameterCountsMatchTimm) {
  EXPECT_EQ(models::VisionTransformer(models::preset("deit_tiny_patch16_224")).num_parameters(), 5717416);
  EXPECT_EQ(models::VisionTransformer(models::preset("deit_small_patch16_224")).num_parameters(), 22050664);
}

TEST(ViT, ParameterNamesAndShapesAreTimms) {
  models::VisionTransformer m(micro());
  std::map<std::string, Shape> shapes;
  for (auto& [name, t] : m.state_dict()) shapes[name] = t.shape();
  const std::map<std::string, Shape> expected = {
      {"cls_token", {1, 1, 24}},
      {"pos_embed", {1, 17, 24}},
      {"patch_embed.proj.weight", {24, 1, 7, 7}},
      {"patch_embed.proj.bias", {24}},
      {"blocks.0.norm1.weight", {24}},
      {"blocks.0.attn.qkv.weight", {72, 24}},
      {"blocks.0.attn.qkv.bias", {72}},
      {"blocks.0.attn.proj.weight", {24, 24}},
      {"blocks.1.mlp.fc1.weight", {96, 24}},
      {"blocks.1.mlp.fc2.bias", {24}},
      {"blocks.1.norm2.bias", {24}},
      {"norm.weight", {24}},
      {"head.weight", {10, 24}},
      {"head.bias", {10}},
  };
  for (auto& [name, shape] : expected) {
    ASSERT_TRUE(shapes.count(name)) << "missing " << name;
    EXPECT_EQ(shapes[name], shape) << name;
  }
  EXPECT_EQ(shapes.size(), 4u + 12u * 2 + 4u);  // tokens+patch, 12 per block, norm+head
}

TEST(ViT, ForwardShapeAndBackwardReachesEveryParameter) {
  models::VisionTransformer m(micro());
  Tensor x = Tensor::zeros({3, 1, 28, 28});
  ops::normal_(x, 0, 1);
  Tensor logits = m.forward(x);
  EXPECT_EQ(logits.shape(), (Shape{3, 10}));
  ops::cross_entropy(logits, Tensor::from_vector({1, 2, 3}, {3}, DType::i64), 0.1).backward();
  for (auto& [name, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    double norm = 0;
    for (double g : p.grad().to_vector()) norm += g * g;
    EXPECT_GT(norm, 0.0) << name;
  }
}

TEST(ViT, InitialisationFollowsTimm) {
  models::VisionTransformer m(models::preset("deit_tiny_patch16_224"));
  auto std_of = [](const Tensor& t) {
    auto v = t.to_vector();
    double s = 0, s2 = 0;
    for (double x : v) s += x, s2 += x * x;
    double mean = s / v.size();
    return std::sqrt(s2 / v.size() - mean * mean);
  };
  EXPECT_NEAR(std_of(m.blocks[0]->mlp->fc1->weight), 0.02, 0.001);  // trunc_normal(0.02)
  EXPECT_NEAR(std_of(m.pos_embed), 0.02, 0.002);
  EXPECT_EQ(m.blocks[0]->attn->named_parameters()[1].second.to_vector()[0], 0.0);  // qkv.bias = 0
  EXPECT_EQ(m.norm->weight.to_vector()[5], 1.0);
}

TEST(ViT, DropPathOnlyActsInTraining) {
  models::ViTConfig c = micro();
  c.drop_path_rate = 0.5;
  models::VisionTransformer m(c);
  Tensor x = Tensor::zeros({4, 1, 28, 28});
  ops::normal_(x, 0, 1);
  m.eval();
  auto a = m.forward(x).to_vector(), b = m.forward(x).to_vector();
  EXPECT_EQ(a, b);
  m.train();
  auto t1 = m.forward(x).to_vector(), t2 = m.forward(x).to_vector();
  EXPECT_NE(t1, t2);
}

TEST(ViT, StateDictRoundTripAndErrorsNameTheTensor) {
  models::VisionTransformer a(micro());
  models::ViTConfig c2 = micro();
  c2.seed = 99;
  models::VisionTransformer b(c2);
  Tensor x = Tensor::ones({2, 1, 28, 28});
  a.eval();
  b.eval();
  EXPECT_NE(a.forward(x).to_vector(), b.forward(x).to_vector());
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(a.forward(x).to_vector(), b.forward(x).to_vector());

  auto sd = a.state_dict();
  sd.erase(sd.begin() + 3);
  try {
    b.load_state_dict(sd);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("patch_embed.proj.bias"), std::string::npos) << e.what();
  }
  auto bad = a.state_dict();
  bad[0].second = Tensor::zeros({1, 1, 25});
  EXPECT_THROW(b.load_state_dict(bad), Error);
}

TEST(ViT, UnknownModelAndBadShapesAreErrors) {
  EXPECT_THROW(models::preset("deit_gigantic"), Error);
  models::ViTConfig c = micro();
  c.num_heads = 5;
  EXPECT_THROW(models::VisionTransformer{c}, Error);
  models::VisionTransformer m(micro());
  EXPECT_THROW(m.forward(Tensor::zeros({2, 3, 28, 28})), Error);
}

}  // namespace
}  // namespace vt::test
