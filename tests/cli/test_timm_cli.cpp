// timm's command lines through the binary: each train.py / validate.py / benchmark.py form and an args.yaml
// resolve to the same config (or benchmark) as their --set twins; `vitrain launch -n 8` divides an ImageNet
// config's global batch; --version; error lines without source positions.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "cli/run_vitrain.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using vt::test::CliRun;
using vt::test::occurrences;
using vt::test::run_vitrain;

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("vt_timm_cli_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// The output of a command that must succeed.
std::string ok(const std::string& args) {
  const CliRun r = run_vitrain(args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.output;
  return r.output;
}

TEST(TimmCli, TrainFlagsResolveLikeTheirSetTwin) {
  const std::string timm =
      ok("train /data/imagenet --model deit_tiny_patch16_224 -b 256 --lr 5e-4 --amp --aa rand-m9-mstd0.5-inc1 "
         "--reprob 0.25 --mixup 0.8 --cutmix 1.0 --smoothing 0.1 --drop-path 0.1 --model-ema --output /runs "
         "--experiment deit_t --epochs 100 --warmup-epochs 3 --opt-betas 0.9 0.99 -vb 100 -j 4 --print-config");
  const std::string twin =
      ok("train --set data.data_dir=/data/imagenet --set model.name=deit_tiny_patch16_224 --set train.batch_size=256 "
         "--set train.global_batch_size=0 --set optim.lr=5e-4 --set train.amp=true --set data.aa=rand-m9-mstd0.5-inc1 "
         "--set data.reprob=0.25 --set data.mixup=0.8 --set data.cutmix=1.0 --set optim.smoothing=0.1 "
         "--set model.drop_path_rate=0.1 --set train.model_ema=true --set train.output=/runs/deit_t "
         "--set train.epochs=100 --set schedule.warmup_epochs=3 --set 'optim.opt_betas=[0.9, 0.99]' "
         "--set eval.batch_size=100 --set data.workers=4 --print-config");
  EXPECT_EQ(timm, twin);
  EXPECT_CONTAINS(timm, "global batch 256 = 256 per GPU x 1 accumulation step x 1 process; lr 5.000e-04 (optim.lr)");
  EXPECT_CONTAINS(timm, "  output: \"/runs/deit_t\"\n");
}

TEST(TimmCli, ArgsYamlResolvesLikeItsSetTwin) {
  const fs::path args = temp_dir() / "args.yaml";
  std::ofstream(args) << "model: deit_tiny_patch16_224\nbatch_size: 128\nlr: null\nlr_base: 0.0005\n"
                         "lr_base_size: 512\nlr_base_scale: linear\nepochs: 10\ndata_dir: /data/imagenet\n"
                         "pin_mem: true\ncooldown_epochs: 0\ntrain_interpolation: bicubic\n";
  const std::string timm = ok("train -c " + args.string() + " --print-config");
  const std::string twin =
      ok("train --set schedule.deit_epoch_lag=false --set model.name=deit_tiny_patch16_224 --set train.batch_size=128 "
         "--set train.global_batch_size=0 --set optim.lr=0 --set optim.lr_base=0.0005 --set optim.lr_base_size=512 "
         "--set optim.lr_base_scale=linear --set train.epochs=10 --set data.data_dir=/data/imagenet --print-config");
  EXPECT_EQ(timm, twin);
  std::ofstream(args) << "model: deit_tiny_patch16_224\nchannels_last: true\nno_aug: true\n";
  const CliRun bad = run_vitrain("train -c " + args.string() + " --print-config");
  EXPECT_EQ(bad.code, 1);
  EXPECT_CONTAINS(bad.output, args.string() + ":3: timm key 'no_aug: true' cannot be honoured");
}

TEST(TimmCli, ValidateFlagsResolveLikeTheirEvalTwin) {
  const fs::path w = temp_dir() / "w.safetensors";
  std::ofstream(w) << "x";  // only parsed here
  const std::string timm = ok("validate /data/imagenet -m deit_small_patch16_224 -b 64 --checkpoint " + w.string() +
                              " --img-size 384 --crop-pct 1.0 --num-classes 100 --use-ema --print-config");
  const std::string twin =
      ok("eval --set data.data_dir=/data/imagenet --set model.name=deit_small_patch16_224 "
         "--set eval.batch_size=64 -w " +
         w.string() +
         " --set model.img_size=384 "
         "--set data.crop_pct=1.0 --set model.num_classes=100 --ema --print-config");
  EXPECT_EQ(timm, twin);
  EXPECT_CONTAINS(timm, "weights: " + w.string());
}

// The benchmark's JSON line without its measured times and loss.
std::string without_timings(std::string json) {
  json = json.substr(json.rfind("{\"impl\""));
  return std::regex_replace(json, std::regex("\"((train|infer)_[a-z_]+|last_loss)\":(\\[[^\\]]*\\]|[^,}]*)"), "");
}

TEST(TimmCli, BenchmarkFlagsMeasureTheSameAsTheirBenchTwin) {
  const fs::path a = temp_dir() / "a.jsonl", b = temp_dir() / "b.jsonl";
  fs::remove(a);
  fs::remove(b);
  const std::string common = " --device cpu --threads 1 --steps 1 --warmup 0";
  ok("benchmark -m vit_micro -b 4 --bench inference --img-size 56 --results-file " + a.string() + common);
  ok("bench --model vit_micro --batch-size 4 --infer --img-size 56 --json " + b.string() + common);
  const std::string ja = vt::test::read_file(a), jb = vt::test::read_file(b);
  EXPECT_CONTAINS(ja, "\"infer_img_per_s\":");
  EXPECT_CONTAINS(ja, "\"train_img_per_s\":null");  // --bench inference times inference alone
  EXPECT_EQ(jb.find("\"train_img_per_s\":null"), std::string::npos) << jb;
  EXPECT_CONTAINS(ja, "\"batch_size\":4");
  EXPECT_EQ(without_timings(ja), without_timings(jb));
  // --img-size builds the model at that size: more position embeddings than at the preset's 28.
  const fs::path c = temp_dir() / "c.jsonl";
  fs::remove(c);
  ok("bench --model vit_micro --batch-size 4 --json " + c.string() + common);
  auto params = [](const std::string& json) { return json.substr(json.rfind("\"params\":"), 20); };
  EXPECT_NE(params(ja), params(vt::test::read_file(c)));
}

TEST(TimmCli, LaunchOfEightRanksDividesTheImagenetGlobalBatch) {
  const std::string out = ok("launch -n 8 -- train -c " + std::string(VT_SOURCE_DIR) +
                             "/configs/imagenet/deit_small_dense.yaml --print-config");
  EXPECT_EQ(occurrences(out, "global batch 1024 = 128 per GPU x 1 accumulation step x 8 processes; lr 1.000e-03"), 8)
      << out;
  EXPECT_EQ(occurrences(out, "  batch_size: 128\n  global_batch_size: 1024\n"), 8);
  // One process: the whole global batch on it.
  EXPECT_CONTAINS(ok("train -c " + std::string(VT_SOURCE_DIR) +
                     "/configs/imagenet/deit_small_dense.yaml "
                     "--print-config"),
                  "global batch 1024 = 1024 per GPU x 1 accumulation step x 1 process");
}

TEST(TimmCli, UnsupportedFlagsAndUnknownKeysAreNamedWithoutSourcePositions) {
  CliRun r = run_vitrain("train --channels-last --print-config");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.output, "--channels-last is a flag of timm's train.py that vitrain train does not support");
  r = run_vitrain("train --set lr=1e-3 --print-config");
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.output, "did you mean 'optim.lr'?");
  EXPECT_EQ(r.output.find(".cpp:"), std::string::npos) << r.output;
  r = run_vitrain("train --set model.drop_path=0.1 --print-config");
  EXPECT_CONTAINS(r.output, "did you mean 'model.drop_path_rate'?");
  r = run_vitrain("train --lr abc --print-config");
  EXPECT_CONTAINS(r.output, "--lr abc: 'optim.lr' expects a number, got 'abc'");
}

TEST(TimmCli, VersionNamesTheVersionAndTheCommit) {
  const std::string v = ok("--version");
  EXPECT_TRUE(std::regex_search(v, std::regex("^vitrain [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{7,}|unknown)")))
      << v;
}

}  // namespace

namespace {

// timm's --output DIR --experiment NAME: the first run trains in DIR/NAME, a second one in DIR/NAME-1 instead of
// overwriting it, and --resume auto continues in DIR/NAME.
TEST(TimmCli, ExperimentFoldersAreNeverOverwritten) {
  const fs::path dir = temp_dir() / "experiments";
  fs::remove_all(dir);
  const std::string run = "train --config " + std::string(VT_SOURCE_DIR) +
                          "/configs/fashion_mnist_vit.yaml --device cpu --set data.train_limit=64"
                          " --set data.test_limit=32 --set train.epochs=1 --set train.batch_size=32"
                          " --set train.global_batch_size=0 --set train.threads=1 --set model.depth=1"
                          " --set model.embed_dim=32 --set model.num_heads=2 --output " +
                          dir.string() + " --experiment tiny";
  ok(run);
  EXPECT_TRUE(fs::exists(dir / "tiny" / "model.safetensors"));
  ok(run);
  EXPECT_TRUE(fs::exists(dir / "tiny-1" / "model.safetensors")) << "the second run did not get its own folder";
  const std::string resumed = ok(run + " --resume auto");
  EXPECT_FALSE(fs::exists(dir / "tiny-2")) << "a resumed run must continue in its folder";
  EXPECT_NE(resumed.find("is finished"), std::string::npos) << resumed;
  fs::remove_all(dir);
}

}  // namespace
