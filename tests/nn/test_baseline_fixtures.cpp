// The Table 2 linear-attention baselines (and BRA, last) against the authors' own modules: scripts/make_baseline_fixtures.py ran
// QishuaiWen/MiTA's files with random weights on a random input and saved x, the state dict (official names), the
// output y and the input gradient dx of <y, g> for a random cotangent g (tests/nn/fixtures/<kind>.pth). Here our
// layer is built by make_attention, must hold exactly the official tensor names and shapes, and our function of
// those weights must give y and dx in f64 (the fixtures' reader: nn/official_fixture.h).
#include <gtest/gtest.h>

#include <map>

#include "test_util.h"
#include "models/attention.h"
#include "models/focused_linear_attention.h"
#include "models/inline_attention.h"
#include "models/mhla_attention.h"
#include "models/pola_attention.h"
#include "nn/official_fixture.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

using Fixture = OfficialFixture;

std::map<std::string, Shape> shapes_of(const nn::Module& m) {
  std::map<std::string, Shape> s;
  for (const auto& [name, t] : m.state_dict()) s[name] = t.shape();
  return s;
}

// Our layer of `type` for the fixture's sizes has the official tensors, by name and shape; `renamed` maps the
// official names that differ (MHLA's to_qkv / to_out.0) to ours.
void expect_official_names(const Fixture& f, const std::string& type,
                           const std::map<std::string, std::string>& renamed = {}) {
  models::AttentionConfig cfg;
  cfg.type = type;
  Generator gen(1);
  const Tensor& x = f["x"];
  auto layer = models::make_attention(cfg, x.size(2), f.size("heads"), 0.0, gen, x.size(1));
  std::map<std::string, Shape> want;
  for (const auto& [name, shape] : f.state_shapes) {
    auto it = renamed.find(name);
    want[it == renamed.end() ? name : it->second] = shape;
  }
  EXPECT_EQ(shapes_of(*layer), want) << type;
}

// y = fn(x) and d<y, g>/dx against the fixture, relative to the largest |value| of each.
void expect_matches(const Fixture& f, const std::function<Tensor(const Tensor&)>& fn, double rel_tol,
                    const std::string& what) {
  Tensor x = f["x"].detach().set_requires_grad(true);
  Tensor y = fn(x);
  ASSERT_EQ(y.shape(), f["y"].shape()) << what;
  ops::sum(y * f["g"]).backward();
  for (auto [got, want, name] : {std::tuple{y.detach(), f["y"], "y"}, std::tuple{x.grad(), f["dx"], "dx"}}) {
    const std::vector<double> a = got.to_vector(), b = want.to_vector();
    double scale = 0;
    for (double v : b) scale = std::max(scale, std::abs(v));
    ASSERT_GT(scale, 0) << what << " " << name;
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], rel_tol * scale) << what << " " << name << " element " << i;
  }
}

TEST(BaselineFixtures, FocusedLinearAttentionMatchesOfficial) {
  const Fixture f = load_official_fixture("flatten");
  expect_official_names(f, "flatten");
  // The official forward runs its products in float32 (it casts q, k, v to float): f32 agreement.
  expect_matches(
      f,
      [&](const Tensor& x) {
        return models::focused_linear_attention(x, f.state("qkv.weight"), f.state("qkv.bias"), f.state("scale"),
                                                f.state("positional_encoding"), f.state("proj.weight"),
                                                f.state("proj.bias"), f.size("heads"));
      },
      2e-5, "flatten");
}

TEST(BaselineFixtures, InLineAttentionMatchesOfficial) {
  const Fixture f = load_official_fixture("inline");
  expect_official_names(f, "inline");
  expect_matches(
      f,
      [&](const Tensor& x) {
        return models::inline_attention(x, f.state("qkv.weight"), f.state("qkv.bias"), f.state("residual.0.weight"),
                                        f.state("residual.0.bias"), f.state("residual.2.weight"),
                                        f.state("residual.2.bias"), f.state("proj.weight"), f.state("proj.bias"),
                                        f.size("heads"));
      },
      1e-12, "inline");
}

TEST(BaselineFixtures, PolaAttentionMatchesOfficial) {
  const Fixture f = load_official_fixture("pola");
  expect_official_names(f, "pola");
  // f64 both sides; ours floors the powers' base at 1e-30 (models/pola_attention.cpp), far below this tolerance.
  expect_matches(
      f,
      [&](const Tensor& x) {
        return models::pola_attention(x, f.state("qkv.weight"), f.state("qkv.bias"), f.state("power"), f.state("scale"),
                                      f.state("positional_encoding"), f.state("proj.weight"), f.state("proj.bias"),
                                      f.size("heads"));
      },
      1e-10, "pola");
}

TEST(BaselineFixtures, MhlaMatchesOfficial) {
  const Fixture f = load_official_fixture("mhla");
  // The official to_qkv / to_out.0 are our qkv / proj (engine/weight_layouts renames them when weights load).
  expect_official_names(f, "mhla",
                        {{"to_qkv.weight", "qkv.weight"},
                         {"to_qkv.bias", "qkv.bias"},
                         {"to_out.0.weight", "proj.weight"},
                         {"to_out.0.bias", "proj.bias"}});
  // The block-mixing matrix starts at the official value (the cos transform of the 4x4 blocks' centre distances).
  const std::vector<double> init = models::mhla_block_mixing_init(16, DType::f64).to_vector();
  const std::vector<double> want = f["init.piece_attn.conv.weight"].to_vector();
  ASSERT_EQ(init.size(), want.size());
  for (size_t i = 0; i < init.size(); ++i) ASSERT_NEAR(init[i], want[i], 1e-7) << i;  // theirs is built in f32
  expect_matches(
      f,
      [&](const Tensor& x) {
        return models::mhla_attention(x, f.state("norm.weight"), f.state("norm.bias"), f.state("to_qkv.weight"),
                                      f.state("to_qkv.bias"), f.state("piece_attn.conv.weight"),
                                      f.state("to_out.0.weight"), f.state("to_out.0.bias"), f.size("heads"));
      },
      1e-12, "mhla");
}

// BRA: rayleizhu/BiFormer's BiLevelRoutingAttention on a 6x6 patch map (3x3 regions of 2x2 patches, topk 4), with
// our CLS treatment put into it by the generator (CLS key/value beside every region's routed ones, the CLS query
// over all tokens). Our layer, built by make_attention with the fixture's n_win, topk and scale, must give the
// official y, dx and every parameter gradient, under the official names (qkv.qkv and wo are our qkv and proj).
// f64 on both sides; the fixture's routing choices win by more than 1e-3 (the generator redraws until they do).
TEST(BaselineFixtures, BraMatchesOfficial) {
  for (const char* kind : {"bra", "bra_qk_dim"}) {
    const Fixture f = load_official_fixture(kind);
    const models::AttentionConfig cfg = official_fixture_config(kind, f);
    EXPECT_EQ(cfg.bra_scale, std::string(kind) == "bra" ? "head_dim" : "qk_dim");
    const std::vector<FixtureComparison> cmp = run_official_fixture(f, cfg, DType::f64, cpu());
    EXPECT_EQ(cmp.size(), 2u + 6u) << kind;  // y, dx, then qkv, proj and lepe weights and biases
    expect_fixture_match(cmp, 1e-12, std::string(kind) + " cpu f64");
    // In f32 (the GPU test's precision, cuda/test_official_mita_cuda.cpp, at its tolerance): the same routing.
    expect_fixture_match(run_official_fixture(f, cfg, DType::f32, cpu()), 1e-4, std::string(kind) + " cpu f32");
  }
}

}  // namespace
}  // namespace vt::test
