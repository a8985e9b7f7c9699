// MiTA, MiTA + DWC (+ Gate), route-only MiTA, Agent attention (with and without its biases) and linear attention
// against the authors' own modules (QishuaiWen/MiTA, MiTA-DeiT/mita/*.py; scripts/make_baseline_fixtures.py ran
// them in PyTorch at DeiT's N = 197, with flash-attn's varlen calls as plain per-segment softmax attention). Our
// CPU layer, built by make_attention and given the fixture's weights under their official names, must give the
// official output, input gradient and every parameter gradient. (MiTA_Attention_Conv_Gate as shipped cannot run:
// it unbinds `qkv` where it built `qkvg`; the generator unbinds `qkvg`.)
//
// Tolerance, relative to each tensor's max |official value|: f64 on both sides, so 1e-10 (rounding differences
// are ~1e-15; a wrong key, expert, bin or term is O(1)). The official Linear_Attention's float32 casts kept f64 when
// the fixture was made (in f32 its gradients can carry 4e-4 of rounding: queries whose ReLU features nearly
// vanish).
// The fixtures' top-k and routing choices win by more than 1e-3 (the generator redraws until they do), so no
// near-tie decides a selection.
#include <gtest/gtest.h>

#include "nn/official_fixture.h"
#include "test_util.h"

namespace vt::test {
namespace {

void check_kind(const std::string& kind, double rel_tol, const std::string& impl = "") {
  const OfficialFixture f = load_official_fixture(kind);
  models::AttentionConfig cfg = official_fixture_config(kind, f);
  if (!impl.empty()) cfg.impl = impl;
  expect_fixture_match(run_official_fixture(f, cfg, DType::f64, cpu()), rel_tol,
                       kind + (impl.empty() ? "" : " impl=" + impl) + " cpu f64");
}

TEST(OfficialMitaFixtures, MitaMatchesOfficial) { check_kind("mita", 1e-10); }
TEST(OfficialMitaFixtures, MitaReferenceImplMatchesOfficial) { check_kind("mita", 1e-10, "reference"); }
TEST(OfficialMitaFixtures, MitaDwcMatchesOfficial) { check_kind("mita_dwc", 1e-10); }
TEST(OfficialMitaFixtures, MitaDwcGateMatchesOfficial) { check_kind("mita_dwc_gate", 1e-10); }
TEST(OfficialMitaFixtures, MitaRouteMatchesOfficial) { check_kind("mita_route", 1e-10); }
TEST(OfficialMitaFixtures, MitaRouteReferenceImplMatchesOfficial) { check_kind("mita_route", 1e-10, "reference"); }
TEST(OfficialMitaFixtures, AgentMatchesOfficial) { check_kind("agent", 1e-10); }
TEST(OfficialMitaFixtures, AgentBiasMatchesOfficial) { check_kind("agent_bias", 1e-10); }
TEST(OfficialMitaFixtures, LinearMatchesOfficial) { check_kind("linear", 1e-10); }

}  // namespace
}  // namespace vt::test
