// Our Segmenter (timm ViT + CBT decoder, spec §5) against a PyTorch one written from the spec: same weights →
// same masks, logits, loss and gradients in f64. The fixture comes from scripts/gen_segmenter_reference.py, run
// with torch + timm on the GPU machine (neither is installed here) and committed under tests/ref/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "io/safetensors.h"
#include "models/segmenter.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

const std::string kFixture = std::string(VT_SOURCE_DIR) + "/tests/ref/segmenter_reference.safetensors";

// The fixture's model (scripts/gen_segmenter_reference.py): 64² images, patch 16, dim 48, depth 2, 3 heads,
// LayerNorm eps 1e-5, CBT decoder with 2 layers of 2 heads × 8 dims and 2×2 representatives, 5 classes.
models::SegmenterConfig fixture_config() {
  io::ModelConfig m;
  m.name = "vit_tiny_patch16_384";
  m.img_size = 64;
  m.patch_size = 16;
  m.embed_dim = 48;
  m.depth = 2;
  m.num_heads = 3;
  m.num_classes = 5;
  m.mlp_ratio = 4.0;
  m.drop_rate = 0.0;
  m.drop_path_rate = 0.0;
  m.layer_norm_eps = 1e-5;
  m.attention.type = "dense";
  m.decoder.type = "cbt";
  m.decoder.layers = 2;
  m.decoder.heads = 2;
  m.decoder.head_dim = 8;
  m.decoder.reps_grid = 2;
  return models::segmenter_config(m, 1);
}

bool is_fixture_parameter(const std::string& name) {
  for (const char* prefix : {"input.", "output.", "grad."})
    if (name.rfind(prefix, 0) == 0) return false;
  return true;
}

// Replaces every parameter and buffer of `m` in place by an f64 tensor (the fixture's value for parameters), so
// the handles the layers hold see f64 from now on, as Module::to does for devices.
void load_as_f64(nn::Module& m, const std::map<std::string, Tensor>& ref) {
  const nn::NamedTensors params = m.named_parameters();
  std::set<std::string> param_names;
  for (const auto& [name, p] : params) param_names.insert(name);
  for (const auto& [name, t] : m.state_dict()) {
    Tensor value;
    if (param_names.count(name)) {
      auto it = ref.find(name);
      ASSERT_TRUE(it != ref.end()) << "the fixture has no parameter '" << name << "'";
      ASSERT_EQ(it->second.shape(), t.shape()) << name;
      value = it->second.to(DType::f64).contiguous().clone();
    } else {
      value = t.detach().to(DType::f64).contiguous().clone();
    }
    TensorImpl& impl = t.impl();
    impl.storage = value.impl().storage;
    impl.strides = value.strides();
    impl.offset = value.offset();
    impl.dtype = DType::f64;
    impl.grad.reset();
  }
  for (const auto& [name, t] : ref) {
    if (is_fixture_parameter(name)) {
      EXPECT_TRUE(param_names.count(name)) << "the fixture's parameter '" << name << "' is not one of ours";
    }
  }
}

// |ours − torch| ≤ 1e-9 · max(|torch|, 1e-3 · max|torch|): relative per element, with a floor for elements that
// cancel to near zero (f64 summation order alone leaves ~1e-15 of the tensor's scale).
void expect_close(const Tensor& actual, const Tensor& ref, const std::string& what) {
  ASSERT_EQ(actual.dtype(), DType::f64) << what;
  ASSERT_EQ(actual.shape(), ref.shape()) << what;
  const auto a = actual.to_vector(), r = ref.to_vector();
  double scale = 0;
  for (double v : r) scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0.0) << what << ": the reference is all zeros";
  double worst = 0;
  size_t worst_at = 0;
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double err = std::abs(a[i] - r[i]) / std::max(std::abs(r[i]), 1e-3 * scale);
    if (err > worst || std::isnan(err)) worst = err, worst_at = i;
    if (!(err <= 1e-9) && bad++ < 3)
      ADD_FAILURE() << what << "[" << i << "]: ours " << a[i] << ", torch " << r[i] << " (relative error " << err
                    << ")";
  }
  if (bad > 3) ADD_FAILURE() << what << ": " << bad << " elements off, worst " << worst << " at " << worst_at;
}

// Loads the fixture at `path` into an f64 Segmenter and compares masks, logits, loss and every gradient.
void check_against_fixture(const std::string& path) {
  std::map<std::string, Tensor> ref;
  for (auto& [name, t] : io::load_safetensors(path)) ref[name] = t;
  for (const char* name : {"input.images", "input.labels", "output.masks", "output.logits", "output.loss"})
    ASSERT_TRUE(ref.count(name)) << "the fixture has no '" << name << "'";

  models::Segmenter seg(fixture_config());
  load_as_f64(seg, ref);
  if (::testing::Test::HasFatalFailure()) return;
  const Tensor images = ref.at("input.images").to(DType::f64);
  const Tensor labels = ref.at("input.labels");
  ASSERT_EQ(labels.dtype(), DType::i64);

  expect_close(seg.forward_masks(images), ref.at("output.masks"), "masks");
  const Tensor logits = seg.forward(images);
  expect_close(logits, ref.at("output.logits"), "logits");
  const Tensor loss = ops::pixel_cross_entropy(logits, labels, 255);
  expect_close(loss.reshape({1}), ref.at("output.loss"), "loss");
  loss.backward();
  int64_t checked = 0;
  for (const auto& [name, p] : seg.named_parameters()) {
    auto it = ref.find("grad." + name);
    if (it == ref.end()) {
      ADD_FAILURE() << "the fixture has no 'grad." << name << "'";
      continue;
    }
    ASSERT_TRUE(p.grad().defined()) << "no gradient for " << name;
    expect_close(p.grad(), it->second, "grad " + name);
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

TEST(SegmenterReference, MasksLogitsLossAndGradientsMatchPyTorch) {
  ASSERT_TRUE(std::filesystem::exists(kFixture))
      << "fixture " << kFixture << " missing: generate it where torch and timm are installed (the GPU machine), "
      << "from the repo root: `env -u LD_LIBRARY_PATH python3 scripts/gen_segmenter_reference.py "
      << "tests/ref/segmenter_reference.safetensors`, and commit it";
  check_against_fixture(kFixture);
}

}  // namespace
}  // namespace vt::test
