// configs/finetune: the Table 7 (Appendix C) rows. Every config loads, is one row of paper_table7.tsv (and every
// row has its config), carries the 50-epoch AdamW fine-tuning recipe, names a timm ImageNet-21K checkpoint we know
// the tag of, and builds its model (one block, to stay fast), which takes a dense timm ViT's weights the way
// training's model.initial_checkpoint loads them: qkv/proj reused, the 21K head replaced by the model's own.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "test_util.h"
#include "engine/pretrained_cfg.h"
#include "engine/recipe.h"
#include "engine/timm_weights.h"
#include "models/vit.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(VT_SOURCE_DIR) / "configs" / "finetune";

std::vector<fs::path> finetune_configs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::set<std::string> table7_rows() {
  std::set<std::string> rows;
  for (const auto& f : tsv_rows(kDir / "paper_table7.tsv")) {
    EXPECT_FALSE(f.size() < 3 || f[1].empty() || f[2].empty()) << f[0];
    rows.insert(f[0]);
  }
  return rows;
}

const Tensor& tensor_named(const io::NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  static const Tensor none;
  return none;
}

TEST(FinetuneConfigs, EveryTable7ConfigLoadsWithItsRecipeAndTakesDenseTimmWeights) {
  const auto paths = finetune_configs();
  ASSERT_EQ(paths.size(), 16u);  // T/S/B/L × dense, MiTA, Agent-49, linear
  std::set<std::string> stems;
  for (const auto& p : paths) stems.insert(p.stem().string());
  EXPECT_EQ(stems, table7_rows());
  for (const auto& p : paths) {
    SCOPED_TRACE(p.string());
    const io::Config c = io::load_config(p.string());
    const std::string stem = p.stem().string();
    const std::string kind = stem.substr(stem.rfind('_') + 1);
    const std::string size = stem.substr(4, stem.rfind('_') - 4);  // vit_<size>_<kind>
    EXPECT_EQ(c.model.name, "vit_" + size + "_patch16_224");
    EXPECT_EQ(c.model.attention.type, kind);
    if (kind == "mita") {
      EXPECT_EQ(c.model.attention.m, 25);
      EXPECT_EQ(c.model.attention.k, 25);
    }
    if (kind == "agent") {
      EXPECT_EQ(c.model.attention.agent_num, 49);
    }
    // The timm ImageNet-21K weights of this architecture, a tag whose configuration we know.
    EXPECT_EQ(c.model.initial_checkpoint, "pretrained/" + c.model.name + ".augreg_in21k.safetensors");
    const engine::PretrainedCfg* tag = engine::find_pretrained_cfg(c.model.name + ".augreg_in21k");
    ASSERT_NE(tag, nullptr);
    EXPECT_EQ(tag->num_classes, 21843);
    EXPECT_EQ(c.data.mean, std::vector<double>(tag->mean.begin(), tag->mean.end()));
    EXPECT_EQ(c.data.std, std::vector<double>(tag->std.begin(), tag->std.end()));
    // 50 epochs of AdamW (the paper); lr 5e-6 per 512 images at the global batch 1024 (ours, DeiT's fine-tuning).
    EXPECT_EQ(c.train.epochs, 50);
    EXPECT_EQ(c.optim.opt, "adamw");
    EXPECT_EQ(c.model.num_classes, 1000);
    for (const int world : {1, 8}) {
      const io::Config r = engine::resolve_for_world(c, world);
      EXPECT_EQ(engine::global_batch(r, world), 1024);
      EXPECT_DOUBLE_EQ(engine::resolved_lr(r, world), 1e-5);
    }
    EXPECT_NO_THROW(engine::check_supported(c));

    models::ViTConfig arch = engine::vit_config(c);
    arch.depth = 1;
    models::VisionTransformer model(arch);
    // A dense timm ViT of the same shape with another class count stands in for the 21K checkpoint.
    models::ViTConfig pretrained = arch;
    pretrained.attention.type = "dense";
    pretrained.num_classes = 11;
    pretrained.seed = 1234;
    const io::NamedTensors given = engine::export_timm_weights(models::VisionTransformer(pretrained));
    const Tensor own_head = model.head->weight.detach().clone();
    engine::load_timm_weights(model, given);
    const io::NamedTensors loaded = model.state_dict();
    for (const char* name : {"blocks.0.attn.qkv.weight", "blocks.0.attn.proj.weight", "patch_embed.proj.weight"})
      EXPECT_EQ(tensor_named(loaded, name).to_vector(), tensor_named(given, name).to_vector()) << name;
    EXPECT_EQ(model.head->weight.shape(), Shape({1000, arch.embed_dim}));
    EXPECT_EQ(model.head->weight.to_vector(), own_head.to_vector());
  }
}

}  // namespace
}  // namespace vt::test
