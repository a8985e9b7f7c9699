// Our GPU attention layers against the authors' own modules: the fixtures of
// tests/nn/test_official_mita_fixtures.cpp (scripts/make_baseline_fixtures.py: MiTA_Attention,
// MiTA_Attention_Conv(_Gate), MiTA_Attention_Route, Agent_Attention, Agent_Attention_Bias, Linear_Attention run in
// f64 at DeiT's N = 197), our layer in f32 on the GPU with the fixture's weights: output, input gradient and every
// parameter gradient. MiTA runs its f32 CUDA kernels (head width 16, m = 25, k = 25 / 50 route-only).
//
// Tolerance, relative to each tensor's max |official value|: 1e-4. f32 against f64 through N = 197 reductions
// gives ~1e-6; a flipped top-k key or expert, a wrong bin or a missing term is O(1e-2) or more (the fixtures'
// selections win by more than 1e-3, so f32 scores pick the same ones). Linear attention, whose normalizer can be
// ill-conditioned: on this fixture the official module run in f32 is within 2.2e-6 of its f64 run.
#include "cuda/device_test_util.h"
#include "nn/official_fixture.h"

namespace vt::test {
namespace {

void check_kind(const std::string& kind, double rel_tol) {
  VT_REQUIRE_DEVICE();
  const OfficialFixture f = load_official_fixture(kind);
  expect_fixture_match(run_official_fixture(f, official_fixture_config(kind, f), DType::f32, kGpu), rel_tol,
                       kind + " cuda f32");
}

TEST(OfficialMitaCuda, MitaMatchesOfficial) { check_kind("mita", 1e-4); }
TEST(OfficialMitaCuda, MitaDwcMatchesOfficial) { check_kind("mita_dwc", 1e-4); }
TEST(OfficialMitaCuda, MitaDwcGateMatchesOfficial) { check_kind("mita_dwc_gate", 1e-4); }
TEST(OfficialMitaCuda, MitaRouteMatchesOfficial) { check_kind("mita_route", 1e-4); }
TEST(OfficialMitaCuda, AgentMatchesOfficial) { check_kind("agent", 1e-4); }
TEST(OfficialMitaCuda, AgentBiasMatchesOfficial) { check_kind("agent_bias", 1e-4); }
TEST(OfficialMitaCuda, LinearMatchesOfficial) { check_kind("linear", 1e-4); }
// BRA (rayleizhu/BiFormer's BiLevelRoutingAttention with our CLS treatment; tests/nn/test_baseline_fixtures.cpp):
// routing by region top-k, gathered k/v, the 5x5 LCE conv. The fixtures' routing choices win by more than 1e-3.
TEST(OfficialMitaCuda, BraMatchesOfficial) {
  check_kind("bra", 1e-4);
  check_kind("bra_qk_dim", 1e-4);
}

}  // namespace
}  // namespace vt::test
