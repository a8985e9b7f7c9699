// The vitrain binary on bad input: one clear error line naming the file/key/model, a non-zero exit, no crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/run_vitrain.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;

using vt::test::CliRun;
using vt::test::run_vitrain;

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("vt_cli_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  return p.string();
}

void expect_clean_failure(const CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.code, 1) << r.output;  // 1 = our error path; a crash would be a signal (-1) or 134/139
  EXPECT_NE(r.output.find("error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.output;
}

TEST(Cli, HelpListsSubcommands) {
  CliRun r = run_vitrain("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("train"), std::string::npos);
  EXPECT_NE(r.output.find("eval"), std::string::npos);
}

TEST(Cli, PlotDrawsTheRunsChartsAsPngAndSvgAndNamesAMissingFile) {
  const fs::path run = temp_dir() / "plot_run";
  fs::create_directories(run);
  write(run / "metrics.jsonl",
        "{\"epoch\":1,\"step\":5,\"train_loss\":2.0,\"lr\":0.001}\n"
        "{\"epoch\":1,\"step\":10,\"train_loss\":1.5,\"lr\":0.002}\n"
        "{\"epoch\":1,\"step\":10,\"lr\":0.002,\"test_top1\":40,\"test_top5\":80,\"test_loss\":1.7}\n");
  CliRun r = run_vitrain("plot " + run.string());
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* f : {"loss.png", "loss.svg", "lr.png", "lr.svg", "accuracy.png", "accuracy.svg"}) {
    EXPECT_NE(r.output.find(f), std::string::npos) << f << " in " << r.output;
    EXPECT_GT(fs::file_size(run / "plots" / f), 1000u) << f;
  }
  expect_clean_failure(run_vitrain("plot " + (temp_dir() / "no_such_run").string()), "no_such_run/metrics.jsonl");
}

TEST(Cli, PlotWithoutAUsableFontFailsInsteadOfDrawingBoxes) {
  const fs::path run = temp_dir() / "plot_run_no_font";
  fs::create_directories(run);
  write(run / "metrics.jsonl", "{\"epoch\":1,\"step\":5,\"train_loss\":2.0,\"lr\":0.001}\n");
  // A fontconfig set-up that knows no font folder, as on a bare machine without fonts.
  const std::string conf =
      write(temp_dir() / "no_fonts.conf", "<?xml version=\"1.0\"?>\n<fontconfig><dir>" +
                                              (temp_dir() / "no_font_dir").string() + "</dir></fontconfig>\n");
  setenv("FONTCONFIG_FILE", conf.c_str(), 1);
  const CliRun r = run_vitrain("plot " + run.string());
  unsetenv("FONTCONFIG_FILE");
  expect_clean_failure(r, "no installed font can draw");
}

TEST(Cli, UnknownYamlKeyNamesFileAndKey) {
  auto cfg = write(temp_dir() / "bad_key.yaml", "model:\n  name: vit_micro\noptim:\n  lrr: 0.1\n");
  expect_clean_failure(run_vitrain("train --config " + cfg), "optim.lrr");
  expect_clean_failure(run_vitrain("train --config " + cfg), "bad_key.yaml");
}

TEST(Cli, WrongTypeNamesKey) {
  auto cfg = write(temp_dir() / "bad_type.yaml", "train:\n  epochs: many\n");
  expect_clean_failure(run_vitrain("train --config " + cfg), "train.epochs");
}

TEST(Cli, EmptyConfigFileIsAnErrorNamingIt) {
  auto cfg = write(temp_dir() / "empty.yaml", "");
  expect_clean_failure(run_vitrain("train -c " + cfg), cfg + ": the config file is empty");
}

TEST(Cli, InfiniteLearningRateNamesTheKey) {
  auto cfg = write(temp_dir() / "inf_lr.yaml", "optim:\n  lr: .inf\n");
  expect_clean_failure(run_vitrain("train -c " + cfg), "optim.lr must be a finite number");
}

TEST(Cli, MalformedYamlNamesFile) {
  auto cfg = write(temp_dir() / "broken.yaml", "model: [unclosed\n  name: x\n");
  expect_clean_failure(run_vitrain("train --config " + cfg), "broken.yaml");
}

TEST(Cli, UnknownModelNameIsAnError) {
  auto out = temp_dir() / "run_unknown_model";
  expect_clean_failure(run_vitrain("train --set model.name=deit_gigantic --set train.output=" + out.string()),
                       "deit_gigantic");
}

TEST(Cli, MissingDatasetNamesThePath) {
  auto out = temp_dir() / "run_missing_data";
  expect_clean_failure(run_vitrain("train -c " + vt::test::fmnist_base_path() +
                                   " --set data.data_dir=/nonexistent/fmnist --set train.output=" + out.string()),
                       "/nonexistent/fmnist");
}

TEST(Cli, CorruptIdxFileNamesTheFile) {
  fs::path dir = temp_dir() / "corrupt_idx";
  fs::create_directories(dir);
  for (const char* name :
       {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    write(dir / name, "not an idx file at all");
  auto out = temp_dir() / "run_corrupt";
  expect_clean_failure(run_vitrain("train -c " + vt::test::fmnist_base_path() + " --set data.data_dir=" + dir.string() +
                                   " --set train.output=" + out.string()),
                       "train-images-idx3-ubyte");
}

TEST(Cli, UnreadableWeightsNamesTheFile) {
  auto w = write(temp_dir() / "garbage.safetensors", "garbage");
  expect_clean_failure(run_vitrain("eval -c " + vt::test::fmnist_base_path() + " --weights " + w),
                       "garbage.safetensors");
}

TEST(Cli, BenchOnTheCpuPrintsThroughputAndAJsonLine) {
  const fs::path json = temp_dir() / "bench.jsonl";
  fs::remove(json);
  CliRun r = run_vitrain(
      "bench --model vit_micro --batch-size 4 --steps 2 --warmup 1 --device cpu --amp --infer "
      "--threads 1 --json " +
      json.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("train: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("infer: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("peak memory n/a"), std::string::npos) << r.output;  // not tracked on the CPU
  EXPECT_NE(r.output.find("{\"impl\":\"vitrain\",\"model\":\"vit_micro\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"amp\":false"), std::string::npos) << "autocast is CUDA-only: " << r.output;
  std::ifstream f(json);
  std::string line;
  ASSERT_TRUE(std::getline(f, line));
  EXPECT_NE(line.find("\"train_img_per_s\":"), std::string::npos) << line;
  EXPECT_NE(line.find("\"train_peak_mem_gib\":null"), std::string::npos) << line;
}

TEST(Cli, BenchSequenceModeTrainsTheLraShapedModelAndPrintsEachWindow) {
  const fs::path json = temp_dir() / "bench_sequence.jsonl";
  fs::remove(json);
  CliRun r = run_vitrain(
      "bench --sequence 64 --depth 2 --dim 64 --heads 2 --mlp-ratio 2 --attention mita --m 4 "
      "--k 4 --batch-size 2 --steps 2 --warmup 1 --repeats 3 --device cpu --threads 1 --json " +
      json.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("sequence model N=64 (dim 64, depth 2, 2 heads, MLP x2), m=4 k=4"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("3 timed windows"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("train: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("; windows: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" seq/s"), std::string::npos) << r.output;
  std::ifstream f(json);
  std::string line;
  ASSERT_TRUE(std::getline(f, line));
  for (const char* key : {"\"task\":\"sequence\"", "\"attention\":\"mita\"", "\"m\":4,\"k\":4", "\"seq_len\":64",
                          "\"dim\":64,\"depth\":2,\"heads\":2,\"mlp_ratio\":2", "\"repeats\":3"})
    EXPECT_NE(line.find(key), std::string::npos) << key << " in " << line;
  // Three positive window rates, the reported figure their median.
  const size_t runs = line.find("\"train_runs\":[");
  ASSERT_NE(runs, std::string::npos) << line;
  std::vector<double> v;
  std::stringstream ss(line.substr(runs + 14, line.find(']', runs) - runs - 14));
  for (std::string cell; std::getline(ss, cell, ',');) v.push_back(std::stod(cell));
  ASSERT_EQ(v.size(), 3u) << line;
  for (double x : v) EXPECT_GT(x, 0.0) << line;
  std::sort(v.begin(), v.end());
  const size_t at = line.find("\"train_img_per_s\":");
  ASSERT_NE(at, std::string::npos) << line;
  EXPECT_NEAR(std::stod(line.substr(at + 18)), v[1], 1e-3 * v[1]) << line;
}

TEST(Cli, BenchSequenceShapeOptionsNeedSequence) {
  expect_clean_failure(run_vitrain("bench --dim 64 --device cpu --steps 1"), "--dim needs --sequence");
  expect_clean_failure(run_vitrain("bench --sequence 3 --attention mita --m 4 --device cpu --steps 1"),
                       "--sequence 3 is shorter than MiTA's --m 4");
}

// With --config the classifier is the config's model, every key of it: a larger img_size adds position embeddings.
TEST(Cli, BenchWithAConfigBuildsTheConfigsModel) {
  auto params = [](const std::string& sets) {
    const std::string config = std::string(VT_SOURCE_DIR) + "/configs/fashion_mnist_vit.yaml";
    CliRun r = run_vitrain("bench -c " + config + " --set model.attention.type=dense --set model.attention.dwc=false" +
                           sets + " --batch-size 2 --steps 1 --warmup 0 --device cpu --threads 1");
    EXPECT_EQ(r.code, 0) << r.output;
    const size_t at = r.output.find("\"params\":");
    EXPECT_NE(at, std::string::npos) << r.output;
    return at == std::string::npos ? -1L : std::stol(r.output.substr(at + 9));
  };
  const long small = params(""), large = params(" --set model.img_size=56");
  // vit_micro: patch 7, dim 96; 28² → 16 patches, 56² → 64: 48 more position embeddings of 96 values.
  EXPECT_EQ(large - small, 48L * 96) << small << " vs " << large;
}

TEST(Cli, BenchRejectsAnUnknownModel) {
  expect_clean_failure(run_vitrain("bench --model deit_gigantic --device cpu --steps 1"), "deit_gigantic");
}

TEST(Cli, BadDeviceIsAClearError) {
  auto out = temp_dir() / "run_bad_device";
  expect_clean_failure(run_vitrain("train --device gpu --set train.output=" + out.string()), "train.device");
  expect_clean_failure(run_vitrain("bench --model vit_micro --device tpu --steps 1"), "unknown device 'tpu'");
}

TEST(Cli, HalfPrecisionAmpIsRejected) {
  auto out = temp_dir() / "run_fp16";
  expect_clean_failure(run_vitrain("train --set train.amp_dtype=float16 --set train.output=" + out.string()),
                       "only bfloat16");
}

}  // namespace
