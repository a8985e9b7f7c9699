// The training engine on the GPU (bf16 autocast, flat-buffer AdamW, EMA, drop-path): stopping mid-epoch and
// resuming from the checkpoint gives the same losses and weights as the uninterrupted run. Our CUDA kernels on
// this path are deterministic (no atomics in the dense ViT step; cuBLASLt's algorithm is cached per shape), so
// the losses are expected to match to the bit; the test allows 1e-6 relative so that a different cuBLASLt
// algorithm on another driver does not fail it, and reports how many matched exactly.
// Needs Fashion-MNIST at the default path (the GPU runner links a 2,000-image subset there).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cuda/device_test_util.h"
#include "data/mini_ade20k.h"
#include "training_runs.h"
#include "engine/seg_trainer.h"
#include "engine/trainer.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

// Head dim 32 (width 64, 2 heads): the flash kernels run under autocast.
io::Config tiny_gpu_config(const std::string& out) { return tiny_training_config(out, "cuda:0", 64); }

// model.safetensors and last.safetensors of runs `a` and `b` under `dir`: integer tensors equal, floating ones within
// 1e-5 of their scale.
void expect_same_files_to_f32_rounding(const TempDir& dir, const std::string& a_run, const std::string& b_run) {
  for (const char* file : {"model.safetensors", "last.safetensors"}) {
    auto a = io::load_safetensors(dir.file(a_run + "/" + file));
    auto b = io::load_safetensors(dir.file(b_run + "/" + file));
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (!is_floating(a[i].second.dtype())) {
        EXPECT_EQ(a[i].second.to_vector(), b[i].second.to_vector()) << file << " " << a[i].first;
        continue;
      }
      EXPECT_LE(max_abs_diff(a[i].second, b[i].second), 1e-5 * (max_abs(a[i].second) + 1e-3))
          << file << " " << a[i].first;
    }
  }
}

TEST(TrainingCuda, StopMidEpochAndResumeGivesTheSameLosses) {
  VT_REQUIRE_DEVICE();
  if (!fs::exists(vt::test::fmnist_dir())) GTEST_SKIP() << "Fashion-MNIST not at " << vt::test::fmnist_dir();
  TempDir dir;
  const auto expected = run_losses(tiny_gpu_config(dir.file("straight")));
  ASSERT_EQ(expected.size(), 12u);
  io::Config cfg = tiny_gpu_config(dir.file("resumed"));
  std::map<int64_t, double> got;
  for (int64_t stop : {4, 9, 0}) {
    cfg.train.max_steps = stop;
    for (auto [k, v] : run_losses(cfg)) got[k] = v;
    cfg.train.resume = "auto";
  }
  ASSERT_EQ(got.size(), expected.size());
  int exact = 0;
  for (auto [k, v] : expected) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_NEAR(got[k], v, 1e-6 * std::abs(v)) << "update " << k;
    exact += got[k] == v;
  }
  std::printf("resumed losses equal to the bit: %d of %zu\n", exact, expected.size());
  auto a = io::load_safetensors(dir.file("straight/model.safetensors"));
  auto b = io::load_safetensors(dir.file("resumed/model.safetensors"));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_LE(max_abs_diff(a[i].second, b[i].second), 1e-5 * (max_abs(a[i].second) + 1e-3)) << a[i].first;
}

// train.cuda_graph: two eager updates, then the captured update replayed (drop-path masks, the warm-up learning rate,
// the clip and the EMA all change per step): the same losses and weights as eager training, also across a resume.
TEST(TrainingCuda, CudaGraphTrainingEqualsEagerTraining) {
  VT_REQUIRE_DEVICE();
  if (!fs::exists(vt::test::fmnist_dir())) GTEST_SKIP() << "Fashion-MNIST not at " << vt::test::fmnist_dir();
  TempDir dir;
  auto config = [&](const std::string& name, bool graph) {
    io::Config c = tiny_gpu_config(dir.file(name));
    c.optim.clip_grad = 0.5;
    c.train.cuda_graph = graph;
    return c;
  };
  const auto expected = run_losses(config("eager", false));
  std::map<int64_t, double> straight = run_losses(config("graph", true)), resumed;
  io::Config cfg = config("graph_resumed", true);
  for (int64_t stop : {5, 0}) {
    cfg.train.max_steps = stop;
    for (auto [k, v] : run_losses(cfg)) resumed[k] = v;
    cfg.train.resume = "auto";
  }
  ASSERT_EQ(straight.size(), expected.size());
  ASSERT_EQ(resumed.size(), expected.size());
  int exact = 0;
  for (auto [k, v] : expected) {
    EXPECT_NEAR(straight[k], v, 1e-6 * std::abs(v)) << "update " << k;
    EXPECT_NEAR(resumed[k], v, 1e-6 * std::abs(v)) << "update " << k << " (resumed)";
    exact += straight[k] == v;
  }
  std::printf("CUDA-graph losses equal to the bit: %d of %zu\n", exact, expected.size());
  expect_same_files_to_f32_rounding(dir, "eager", "graph");  // last.safetensors: also the EMA and AdamW moments
}

// Segmentation through the same loop: a tiny Segmenter on a generated mini-ADE20K with train.cuda_graph (the EMA and
// the clip on, so the captured update holds them too) gives eager training's losses and weights.
TEST(TrainingCuda, SegmentationCudaGraphTrainingEqualsEagerTraining) {
  VT_REQUIRE_DEVICE();
  TempDir dir;
  const std::string data = write_mini_ade20k(dir.file("data"));
  auto run = [&](const std::string& name, bool graph, std::vector<double>& losses) {
    engine::TrainHooks hooks;
    hooks.on_update = [&](int64_t, double loss) { losses.push_back(loss); };
    engine::train_segmentation(mini_segmenter_config("vit_tiny_dense.yaml", data, dir.file(name),
                                                     {"train.device=cuda:0", "data.test_limit=1", "optim.clip_grad=0.5",
                                                      "train.model_ema=true", "train.model_ema_decay=0.9",
                                                      std::string("train.cuda_graph=") + (graph ? "true" : "false")}),
                               hooks);
  };
  std::vector<double> eager, graph;
  run("eager", false, eager);
  run("graph", true, graph);
  ASSERT_EQ(eager.size(), 6u);  // 8 images / batch 4 × 3 epochs: two eager updates, then replays
  ASSERT_EQ(graph.size(), eager.size());
  int exact = 0;
  for (size_t k = 0; k < eager.size(); ++k) {
    EXPECT_NEAR(graph[k], eager[k], 1e-6 * std::abs(eager[k])) << "update " << k + 1;
    exact += graph[k] == eager[k];
  }
  std::printf("segmentation CUDA-graph losses equal to the bit: %d of %zu\n", exact, eager.size());
  expect_same_files_to_f32_rounding(dir, "eager", "graph");  // last.safetensors: also the EMA and SGD momentum
}

}  // namespace
}  // namespace vt::test
