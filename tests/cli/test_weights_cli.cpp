// `vitrain eval --weights X.pth` on the torch fixtures of scripts/gen_weights_fixtures.py (Fashion-MNIST, a few
// test images), strictness on the command line, and `vitrain convert` round trips (.pth <-> safetensors, our
// training checkpoint's EMA weights to timm's names).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli/run_vitrain.h"
#include "test_util.h"
#include "engine/checkpoint.h"
#include "engine/timm_weights.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "models/registry.h"

namespace {

namespace fs = std::filesystem;
using vt::test::fmnist_base_path;
using vt::test::run_vitrain;

std::string fixture(const std::string& name) { return std::string(VT_SOURCE_DIR) + "/tests/ref/" + name; }

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("vt_weights_cli_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// The fixtures' tiny ViT on 64 Fashion-MNIST test images, on the CPU.
std::string tiny_eval(const std::string& extra) {
  return "eval -c " + fmnist_base_path() +
         " --device cpu --set model.name=vit_micro --set model.embed_dim=16 --set model.depth=1 "
         "--set model.num_heads=1 --set data.test_limit=64 " +
         extra;
}

bool dataset_present() { return fs::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"); }

TEST(WeightsCli, EvalRunsOnEveryTorchFixture) {
  if (!dataset_present()) GTEST_SKIP() << "Fashion-MNIST not installed (scripts/setup.sh installs it)";
  const std::pair<std::string, std::string> cases[] = {
      {"weights_deit.pth", ""},
      {"weights_deit_ddp.pth", ""},
      {"weights_deit_wrapper.pth", "--ema"},
      {"weights_deit_distilled.pth",
       "--set model.name=deit_tiny_distilled_patch16_224 --set model.img_size=28 "
       "--set model.patch_size=7 --set model.in_chans=1 --set model.num_classes=10"},
      {"weights_mita_mita.pth", "--set model.attention.type=mita --set model.attention.m=4 --set model.attention.k=4"},
      {"weights_mita_mita_dwc.pth",
       "--set model.attention.type=mita --set model.attention.m=4 "
       "--set model.attention.k=4 --set model.attention.dwc=true"},
      {"weights_mita_mita_gate.pth",
       "--set model.attention.type=mita --set model.attention.m=4 "
       "--set model.attention.k=4 --set model.attention.dwc=true "
       "--set model.attention.gate=true"},
      {"weights_mita_mita_route.pth", "--set model.attention.type=mita_route --set model.attention.m=4"},
      {"weights_mita_agent.pth", "--set model.attention.type=agent --set model.attention.agent_num=4"},
      {"weights_mita_agent_bias.pth", "--set model.attention.type=agent_bias --set model.patch_size=2"},
      {"weights_mita_linear.pth", "--set model.attention.type=linear --set model.num_heads=2"},
  };
  for (const auto& [file, extra] : cases) {
    const auto r = run_vitrain(tiny_eval("--json --weights " + fixture(file) + " " + extra));
    EXPECT_EQ(r.code, 0) << file << ": " << r.output;
    EXPECT_NE(r.output.find(" * Acc@1 "), std::string::npos) << file << ": " << r.output;
    EXPECT_NE(r.output.find("\"amp\":false"), std::string::npos) << file << ": " << r.output;  // f32 by default
  }
}

TEST(WeightsCli, StrictEvalNamesTheTensorsAndNonStrictWarnsListingThem) {
  if (!dataset_present()) GTEST_SKIP() << "Fashion-MNIST not installed (scripts/setup.sh installs it)";
  const auto strict = run_vitrain(tiny_eval("--weights " + fixture("weights_mita_mita_dwc.pth")));
  EXPECT_EQ(strict.code, 1) << strict.output;
  EXPECT_NE(strict.output.find("weights_mita_mita_dwc.pth"), std::string::npos) << strict.output;
  EXPECT_NE(strict.output.find("unexpected tensor(s): blocks.0.attn.dwc.weight, blocks.0.attn.dwc.bias"),
            std::string::npos)
      << strict.output;
  const auto loose = run_vitrain(tiny_eval("--non-strict --weights " + fixture("weights_mita_mita_dwc.pth")));
  EXPECT_EQ(loose.code, 0) << loose.output;
  EXPECT_NE(loose.output.find("--non-strict"), std::string::npos) << loose.output;
  EXPECT_NE(loose.output.find("blocks.0.attn.dwc.weight"), std::string::npos) << loose.output;
  EXPECT_NE(loose.output.find(" * Acc@1 "), std::string::npos) << loose.output;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The weights vitrain writes carry per-tensor checksums: a damaged copy fails naming the file and the tensor,
// where before it evaluated (exit 0) with changed weights.
TEST(WeightsCli, DamagedWeightsFailNamingTheFileAndTheTensor) {
  if (!dataset_present()) GTEST_SKIP() << "Fashion-MNIST not installed (scripts/setup.sh installs it)";
  const fs::path d = temp_dir();
  const std::string good = (d / "dwc.safetensors").string(), bad = (d / "dwc_bad.safetensors").string();
  const std::string mita =
      "--set model.attention.type=mita --set model.attention.m=4 --set model.attention.k=4 "
      "--set model.attention.dwc=true --weights ";
  auto r = run_vitrain("convert --layout vitrain --in " + fixture("weights_mita_mita_dwc.pth") + " --out " + good);
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_vitrain(tiny_eval(mita + good));
  ASSERT_EQ(r.code, 0) << r.output;

  const std::string bytes = read_file_bytes(good);
  std::string flipped = bytes;
  flipped.back() = static_cast<char>(flipped.back() ^ 0x10);  // the last data byte
  write_file_bytes(bad, flipped);
  r = run_vitrain(tiny_eval(mita + bad));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(bad), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("checksum mismatch"), std::string::npos) << r.output;

  // One header byte renames blocks.0.attn.dwc.weight: an error, not a tensor left at its random initial values.
  std::string renamed = bytes;
  const size_t at = renamed.find("\"blocks.0.attn.dwc.weight\":{");
  ASSERT_NE(at, std::string::npos);
  renamed[at + std::string("\"blocks.0.attn.dwc.weigh").size()] = 'u';
  write_file_bytes(bad, renamed);
  r = run_vitrain(tiny_eval(mita + bad));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(bad), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("blocks.0.attn.dwc.weigh"), std::string::npos) << r.output;
}

TEST(WeightsCli, AmpIsRecordedInTheResultsRow) {
  if (!dataset_present()) GTEST_SKIP() << "Fashion-MNIST not installed (scripts/setup.sh installs it)";
  const auto r = run_vitrain(tiny_eval("--amp --json --weights " + fixture("weights_deit.pth")));
  // bf16 autocast needs CUDA; on the CPU it is refused (an error) or recorded, never silently f32.
  if (r.code == 0) EXPECT_NE(r.output.find("\"amp\":true"), std::string::npos) << r.output;
  else EXPECT_NE(r.output.find("error:"), std::string::npos) << r.output;
}

vt::io::NamedTensors read_any(const std::string& path) {
  return vt::io::is_torch_checkpoint(path) ? vt::io::read_torch_checkpoint(path).tensors
                                           : vt::io::load_safetensors(path);
}

void expect_equal_tensors(const vt::io::NamedTensors& a, const vt::io::NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    const vt::Tensor* other = nullptr;
    for (const auto& [n, u] : b)
      if (n == name) other = &u;
    ASSERT_TRUE(other) << name;
    ASSERT_EQ(t.shape(), other->shape()) << name;
    const vt::Tensor x = t.contiguous().to(vt::DType::f32), y = other->contiguous().to(vt::DType::f32);
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.data<float>()[i], y.data<float>()[i]) << name;
  }
}

TEST(WeightsCli, ConvertPthToSafetensorsAndBackKeepsEveryTensor) {
  const fs::path d = temp_dir();
  const std::string st = (d / "deit.safetensors").string(), back = (d / "deit.pth").string();
  auto r = run_vitrain("convert --in " + fixture("weights_deit_wrapper.pth") + " --out " + st);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("left out optimizer"), std::string::npos) << r.output;
  const vt::io::NamedTensors exported = vt::io::load_safetensors(st);
  vt::models::ViTConfig cfg = vt::engine::infer_vit_config(exported);
  vt::engine::check_timm_compatible(exported, cfg);  // timm's load_state_dict(strict=True) would take it
  r = run_vitrain("convert --in " + st + " --out " + back);
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal_tensors(read_any(back), vt::io::read_torch_checkpoint(fixture("weights_deit_wrapper.pth")).tensors);
  // The official MiTA layout: linear attention's to_qkv / to_out.0 come back as they went in; --layout vitrain
  // writes ours.
  const std::string lin = (d / "lin.pth").string(), ours = (d / "lin.safetensors").string();
  ASSERT_EQ(run_vitrain("convert --in " + fixture("weights_mita_linear.pth") + " --out " + lin).code, 0);
  expect_equal_tensors(read_any(lin), read_any(fixture("weights_mita_linear.pth")));
  r = run_vitrain("convert --layout vitrain --in " + fixture("weights_mita_linear.pth") + " --out " + ours);
  ASSERT_EQ(r.code, 0) << r.output;
  bool has_ours = false;
  for (const auto& [n, t] : read_any(ours)) has_ours |= n == "blocks.0.attn.qkv.weight";
  EXPECT_TRUE(has_ours);
}

TEST(WeightsCli, ConvertTakesTheEmaOfOurCheckpointAndDropsTheOptimizer) {
  const fs::path d = temp_dir();
  vt::io::ModelConfig m;
  m.embed_dim = 16, m.depth = 1, m.num_heads = 1;
  vt::models::VisionTransformer model(vt::models::vit_config(m, 1)), ema(vt::models::vit_config(m, 2));
  vt::engine::Checkpoint ckpt;
  ckpt.model = model.state_dict();
  ckpt.ema = ema.state_dict();
  ckpt.optimizer = {{"step", vt::Tensor::zeros({1}, vt::DType::f32)}};
  const std::string in = (d / "best.safetensors").string(), out = (d / "model.safetensors").string();
  vt::engine::save_checkpoint(in, ckpt);
  const auto r = run_vitrain("convert --in " + in + " --ema --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const vt::io::NamedTensors exported = vt::io::load_safetensors(out);
  vt::engine::check_timm_compatible(exported, vt::engine::infer_vit_config(exported));
  expect_equal_tensors(exported, ema.state_dict());
}

TEST(WeightsCli, ConvertIsStrictAboutForeignTensors) {
  const fs::path d = temp_dir();
  vt::io::NamedTensors w = vt::io::read_torch_checkpoint(fixture("weights_deit.pth")).tensors;
  w.emplace_back("blocks.0.attn.mystery", vt::Tensor::zeros({3}, vt::DType::f32));
  const std::string in = (d / "odd.safetensors").string(), out = (d / "out.safetensors").string();
  vt::io::save_safetensors(in, w);
  auto r = run_vitrain("convert --in " + in + " --out " + out);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("1 unexpected tensor(s): blocks.0.attn.mystery"), std::string::npos) << r.output;
  r = run_vitrain("convert --non-strict --in " + in + " --out " + out);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("blocks.0.attn.mystery"), std::string::npos) << r.output;  // the warning lists it
  vt::engine::check_timm_compatible(vt::io::load_safetensors(out), vt::engine::infer_vit_config(w));
}

}  // namespace
