// The Long Range Arena classifier on the GPU: with each attention kind of Table 5 (and the dual form) its f32 logits
// and parameter gradients equal the CPU's; and every configs/lra row trains at its full size (sequence length,
// width, batch, m = k = 128) under bf16 autocast with finite losses, printing its training steps/s beside the
// paper's (configs/lra/paper_table5.tsv) — random tokens stand in for the data, so only the speed means anything.
//
// Tolerance as test_attention_kinds_cuda.cpp: f32 on both sides with different summation orders, 2e-4·max|ref|.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/rng.h"
#include "cuda/device_test_util.h"
#include "engine/sequence_task.h"
#include "io/config.h"
#include "models/lra_classifier.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

models::LraConfig small(const std::string& kind, bool dual) {
  models::LraConfig c;
  c.encoder.dim = 32, c.encoder.depth = 2, c.encoder.heads = 2, c.encoder.mlp_ratio = 2.0;
  c.encoder.attention.type = kind;
  c.encoder.attention.m = 4;
  c.encoder.attention.k = kind == "mita_route" ? 8 : 4;
  c.encoder.attention.agent_num = 4;
  c.encoder.attention.landmark_pool = "sequence";
  c.vocab_size = 20, c.max_length = 64, c.num_classes = 3, c.head_hidden = 64;
  c.dual = dual;
  return c;
}

Tensor random_tokens(const Shape& shape, int64_t vocab, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(1 + rng::bits_at(seed, 0, i) % (vocab - 1));
  for (size_t i = v.size() - 10; i < v.size(); ++i) v[i] = 0;  // some padding
  return Tensor::from_vector(v, shape, DType::i64);
}

void check_kind(const std::string& kind, bool dual = false) {
  SCOPED_TRACE(kind + (dual ? " dual" : ""));
  models::LraClassifier cpu_model(small(kind, dual)), gpu_model(small(kind, dual));
  gpu_model.load_state_dict(cpu_model.state_dict());
  gpu_model.to(kGpu);
  cpu_model.eval(), gpu_model.eval();
  const Tensor tokens = random_tokens(dual ? Shape{3, 2, 64} : Shape{3, 64}, 20, 7);
  const Tensor y = Tensor::from_vector({0, 2, 1}, {3}, DType::i64);
  Tensor lc = cpu_model.forward(tokens);
  ops::cross_entropy(lc, y).backward();
  Tensor lg = gpu_model.forward(tokens.to(kGpu));
  ops::cross_entropy(lg, y.to(kGpu)).backward();
  expect_gpu_model_equals_cpu(lg, lc, gpu_model, cpu_model, 2e-4);
}

TEST(LraCuda, DenseMatchesTheCpu) {
  VT_REQUIRE_DEVICE();
  check_kind("dense");
}
TEST(LraCuda, MitaMatchesTheCpu) {
  VT_REQUIRE_DEVICE();
  check_kind("mita");
}
TEST(LraCuda, RouteOnlyMitaMatchesTheCpu) {
  VT_REQUIRE_DEVICE();
  check_kind("mita_route");
}
TEST(LraCuda, AgentMatchesTheCpu) {
  VT_REQUIRE_DEVICE();
  check_kind("agent");
}
TEST(LraCuda, DualEncoderMatchesTheCpu) {
  VT_REQUIRE_DEVICE();
  check_kind("mita", true);
}

// Full-length random sequences of the task's vocabulary and classes.
data::lra::SequenceSet random_set(const io::Config& c, int64_t n, uint64_t seed) {
  const std::string& task = c.data.lra_task;
  const int64_t vocab = task == "listops" ? 16 : 257, classes = task == "listops" ? 10 : task == "image" ? 10 : 2;
  data::lra::SequenceSet s{task, {}, vocab, classes, c.data.max_length};
  for (int64_t i = 0; i < n; ++i) {
    data::lra::SequenceExample e;
    for (int doc = 0; doc < (s.pairs() ? 2 : 1); ++doc) {
      std::vector<int32_t>& t = doc == 0 ? e.tokens : e.tokens2;
      t.resize(static_cast<size_t>(c.data.max_length));
      for (size_t j = 0; j < t.size(); ++j)
        t[j] = static_cast<int32_t>(1 + rng::bits_at(seed + doc, static_cast<uint64_t>(i) << 13, j) % (vocab - 1));
    }
    e.label = static_cast<int32_t>(i % classes);
    s.examples.push_back(std::move(e));
  }
  return s;
}

TEST(LraCuda, EveryTable5ConfigTrainsAtFullSizeAndReportsItsSpeed) {
  VT_REQUIRE_DEVICE();
  const std::string dir = std::string(VT_SOURCE_DIR) + "/configs/lra";
  std::map<std::string, std::string> paper;  // config -> paper steps/s
  for (const auto& f : tsv_rows(dir + "/paper_table5.tsv"))
    if (f[0] != "average") paper[f[0]] = f.size() > 4 ? f[4] : "";
  ASSERT_EQ(paper.size(), 20u);
  constexpr int64_t kUpdates = 40, kTimedFrom = 10;
  const std::filesystem::path out = std::filesystem::temp_directory_path() / "vt_lra_cuda_speed";
  for (const auto& [name, paper_sps] : paper) {
    SCOPED_TRACE(name);
    io::Config c = io::load_config(dir + "/" + name + ".yaml");
    c.data.updates_per_epoch = kUpdates;
    c.train.epochs = 1;
    c.schedule.warmup_epochs = std::min(c.schedule.warmup_epochs, 0.5);  // Pathfinder's and Image's 1 epoch is the run
    c.train.device = "cuda";
    c.train.output = (out / name).string();
    c.train.log_interval = kUpdates;
    c.train.checkpoint_interval = 0;
    const int64_t batch = c.train.global_batch_size;
    const engine::LraSplits data{random_set(c, batch * 4, 1), random_set(c, batch, 2), random_set(c, batch, 3)};
    std::chrono::steady_clock::time_point t0, t1;
    double last_loss = 0;
    engine::TrainHooks hooks;
    hooks.on_update = [&](int64_t step, double loss) {
      if (step == kTimedFrom) t0 = std::chrono::steady_clock::now();
      if (step == kUpdates) t1 = std::chrono::steady_clock::now();  // before the evaluation
      last_loss = loss;
    };
    const engine::SequenceTrainSummary s = engine::train_sequence(c, hooks, &data);
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    EXPECT_EQ(s.steps, kUpdates);
    EXPECT_TRUE(std::isfinite(last_loss));
    std::printf("LRA speed %-22s N %5lld batch %3lld: %7.2f steps/s (paper %s)\n", name.c_str(),
                static_cast<long long>(c.data.max_length), static_cast<long long>(batch),
                static_cast<double>(kUpdates - kTimedFrom) / seconds, paper_sps.c_str());
    std::filesystem::remove_all(out / name);
  }
}

}  // namespace
}  // namespace vt::test
