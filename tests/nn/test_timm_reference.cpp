// Same weights → same logits, loss and gradients as timm. The fixture comes from scripts/gen_reference.py,
// run with timm on the GPU machine (timm is not installable here) and committed under tests/ref/.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "io/safetensors.h"
#include "models/registry.h"
#include "models/vit.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

// llm.c's rule: |a - ref| <= atol + rtol·|ref|.
void expect_close(const Tensor& actual, const Tensor& ref, double atol, double rtol, const std::string& what) {
  ASSERT_EQ(actual.shape(), ref.shape()) << what;
  auto a = actual.to_vector(), r = ref.to_vector();
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - r[i]) <= atol + rtol * std::abs(r[i])) && bad++ < 3)
      ADD_FAILURE() << what << "[" << i << "]: ours " << a[i] << ", timm " << r[i];
}

TEST(TimmReference, LogitsLossAndGradientsMatch) {
  const std::string path = std::string(VT_SOURCE_DIR) + "/tests/ref/vit_ref.safetensors";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture " << path << " missing: run scripts/gen_reference.py";
  std::map<std::string, Tensor> ref;
  for (auto& [name, t] : io::load_safetensors(path)) ref[name] = t;

  models::ViTConfig c = models::preset("vit_micro");
  c.embed_dim = 24;
  c.depth = 2;
  c.num_heads = 2;
  models::VisionTransformer m(c);
  nn::NamedTensors weights;
  for (auto& [name, p] : m.named_parameters()) weights.emplace_back(name, ref.at(name));
  m.load_state_dict(weights);

  Tensor logits = m.forward(ref.at("input"));
  expect_close(logits, ref.at("logits"), 1e-5, 1e-4, "logits");
  Tensor loss = ops::cross_entropy(logits, ref.at("target"), 0.1);
  expect_close(loss.reshape({1}), ref.at("loss"), 1e-6, 1e-5, "loss");
  loss.backward();
  for (auto& [name, p] : m.named_parameters())
    expect_close(p.grad(), ref.at("grad." + name), 1e-6, 1e-3, "grad " + name);
}

}  // namespace
}  // namespace vt::test
