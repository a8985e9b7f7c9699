// `vitrain flops`: the per-module table and the total line for a Table 2 config, the JSON line, --model with --set.
#include <gtest/gtest.h>

#include <string>

#include "cli/run_vitrain.h"

namespace {

using vt::test::CliRun;
using vt::test::run_vitrain;

bool has(const CliRun& r, const std::string& needle) { return r.output.find(needle) != std::string::npos; }

TEST(FlopsCli, MitaSmallConfigPrintsTableAndTotal) {
  CliRun r =
      run_vitrain("flops --config " + std::string(VT_SOURCE_DIR) + "/configs/imagenet/deit_small_mita.yaml --json");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r, "params 22.05M  MACs 4.43G (all matmuls) / 4.30G (fvcore-style)")) << r.output;
  EXPECT_TRUE(has(r, "attn.core")) << r.output;
  EXPECT_TRUE(has(r, "patch_embed")) << r.output;
  const std::string table = r.output.substr(0, r.output.find('{'));
  EXPECT_EQ(table.find("attn.gate"), std::string::npos) << r.output;  // no gate in this model: no table row
  EXPECT_TRUE(has(r, "\"macs_fvcore\":")) << r.output;
}

TEST(FlopsCli, ModelNameWithOverrides) {
  CliRun r =
      run_vitrain("flops --model deit_tiny_patch16_224 --set model.num_classes=1000 --set model.attention.type=dense");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r, "params 5.72M  MACs 1.26G (all matmuls) / 1.26G (fvcore-style)")) << r.output;
}

TEST(FlopsCli, UnknownAttentionIsAClearError) {
  CliRun r = run_vitrain("flops --model deit_tiny_patch16_224 --set model.attention.type=sparse");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r, "error:")) << r.output;
}

}  // namespace
