// Long Range Arena training (engine/sequence_task.h) at CI size on the CPU: each of the five tasks trains through
// the one training loop with a Table 5 config (shrunk), evaluates, and resumes exactly (stopped mid-epoch and
// resumed with --resume auto: the same losses bit for bit, the same final weights and scores). ListOps and
// Pathfinder are generated on disk by data/lra's generators and read back; Text, Retrieval and Image are built in
// memory. Also: evaluating a checkpoint reproduces the run's test score; two ranks in threads train on the batches
// of one process; every configs/lra row holds Nystromformer's recipe; the stream of shuffled passes; the config,
// recipe and data errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/rng.h"
#include "ddp_runs.h"
#include "data/lra/listops_generator.h"
#include "data/lra/pathfinder_generator.h"
#include "engine/recipe.h"
#include "engine/sequence_task.h"
#include "io/config.h"
#include "io/metrics.h"
#include "io/safetensors.h"
#include "io_temp_dir.h"
#include "test_util.h"

namespace vt::test {
namespace {

using data::lra::SequenceSet;

constexpr int64_t kLength = 48;

// configs/lra/<task>_<kind>.yaml shrunk: width 16, one block, m = k = 4 (route-only k = 8), 4 agents, sequences of
// kLength, batches of 4, 3 updates per epoch, 2 epochs, dropout on (the RNG state must resume too).
io::Config tiny_lra_config(const std::string& task, const std::string& kind, const std::string& out) {
  io::Config c = io::load_config(std::string(VT_SOURCE_DIR) + "/configs/lra/" + task + "_" + kind + ".yaml");
  c.model.embed_dim = 16, c.model.depth = 1, c.model.num_heads = 2;
  c.model.attention.m = 4;
  c.model.attention.k = kind == "route_only" ? 8 : 4;
  c.model.attention.agent_num = 4;
  c.model.attention.impl = "fused";
  c.data.max_length = kLength;
  c.data.updates_per_epoch = 3;
  c.train.epochs = 2;
  c.train.global_batch_size = 0;
  c.train.batch_size = 4;
  c.train.device = "cpu";
  c.train.threads = 1;
  c.train.log_interval = 1;
  c.train.output = out;
  c.eval.batch_size = 8;
  c.schedule.warmup_epochs = 0.5;
  c.validate();
  return c;
}

// `n` sequences of 5..kLength tokens in 1..vocab-1 whose label is the first token's class mod `classes`.
SequenceSet memory_set(const std::string& task, int64_t n, int64_t vocab, int64_t classes, uint64_t seed) {
  SequenceSet s{task, {}, vocab, classes, kLength};
  for (int64_t i = 0; i < n; ++i) {
    data::lra::SequenceExample e;
    auto draw = [&](int64_t salt) {
      std::vector<int32_t> t(static_cast<size_t>(5 + rng::bits_at(seed, salt * 4096, i) % (kLength - 4)));
      for (size_t j = 0; j < t.size(); ++j)
        t[j] = static_cast<int32_t>(1 + rng::bits_at(seed, (salt + 1 + j) * 4096, i) % (vocab - 1));
      return t;
    };
    e.tokens = draw(0);
    if (s.pairs()) e.tokens2 = draw(1000);
    e.label = static_cast<int32_t>(e.tokens[0] % classes);
    s.examples.push_back(std::move(e));
  }
  return s;
}

engine::LraSplits memory_splits(const std::string& task, int64_t vocab, int64_t classes) {
  return {memory_set(task, 40, vocab, classes, 1), memory_set(task, 10, vocab, classes, 2),
          memory_set(task, 9, vocab, classes, 3)};
}

std::map<int64_t, double> run_losses(const io::Config& cfg, const engine::LraSplits* data,
                                     engine::SequenceTrainSummary* summary) {
  std::map<int64_t, double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t step, double loss) { losses[step] = loss; };
  *summary = engine::train_sequence(cfg, hooks, data);
  return losses;
}

void expect_same_tensors(const std::string& a, const std::string& b) {
  auto ta = io::load_safetensors(a), tb = io::load_safetensors(b);
  ASSERT_EQ(ta.size(), tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    ASSERT_EQ(ta[i].first, tb[i].first);
    ASSERT_EQ(ta[i].second.shape(), tb[i].second.shape());
    const size_t n = static_cast<size_t>(ta[i].second.numel()) * dtype_size(ta[i].second.dtype());
    EXPECT_EQ(0, std::memcmp(ta[i].second.raw_data(), tb[i].second.raw_data(), n)) << ta[i].first << " differs";
  }
}

// Trains `make(dir)` straight and stopped after 4 updates (mid epoch 2) then resumed: the same losses, weights,
// best metric and scores. Returns the straight run's summary.
engine::SequenceTrainSummary expect_trains_and_resumes_exactly(
    const std::function<io::Config(const std::string&)>& make, const engine::LraSplits* data, const TempDir& dir) {
  engine::SequenceTrainSummary full, part;
  const auto expected = run_losses(make(dir.file("straight")), data, &full);
  EXPECT_EQ(expected.size(), 6u);
  EXPECT_EQ(full.steps, 6);
  EXPECT_GT(full.val.count, 0);
  EXPECT_GT(full.test.count, 0);
  EXPECT_EQ(full.best_epoch >= 1, true);
  io::Config cfg = make(dir.file("resumed"));
  cfg.train.max_steps = 4;
  auto got = run_losses(cfg, data, &part);
  EXPECT_TRUE(part.stopped_at_max_steps);
  cfg.train.max_steps = 0;
  cfg.train.resume = "auto";
  for (auto [k, v] : run_losses(cfg, data, &part)) got[k] = v;
  EXPECT_EQ(got.size(), expected.size());
  for (auto [k, v] : expected) EXPECT_EQ(got[k], v) << "update " << k;  // exact: same bits
  expect_same_tensors(dir.file("straight/model.safetensors"), dir.file("resumed/model.safetensors"));
  EXPECT_EQ(part.val.top1, full.val.top1);
  EXPECT_EQ(part.val.loss, full.val.loss);
  EXPECT_EQ(part.best_metric, full.best_metric);
  EXPECT_EQ(part.best_epoch, full.best_epoch);
  // The summary rows (rebuilt from metrics.jsonl on resume) match, the test split scored at the best epochs.
  EXPECT_EQ(read_file(dir.file("resumed/summary.csv")), read_file(dir.file("straight/summary.csv")));
  EXPECT_CONTAINS(read_file(dir.file("straight/summary.csv")), "epoch,train_loss,eval_loss,eval_top1,test_top1");
  return full;
}

TEST(SequenceTask, ListOpsGeneratedOnDiskTrainsEvaluatesAndResumesExactly) {
  TempDir dir;
  data::lra::ListOpsOptions o;
  o.min_length = 8, o.max_length = kLength, o.max_depth = 4;
  data::lra::write_listops_release(dir.file("data"), 7, 40, 8, 8, o);
  auto make = [&](const std::string& out) {
    io::Config c = tiny_lra_config("listops", "dense", out);
    c.data.data_dir = dir.file("data");
    return c;
  };
  const engine::SequenceTrainSummary full = expect_trains_and_resumes_exactly(make, nullptr, dir);
  EXPECT_EQ(full.test.count, 8);
  // `vitrain eval` of the best checkpoint scores the test split as the run did when that model became the best.
  const engine::SequenceEval again =
      engine::evaluate_sequence_weights(make(dir.file("eval")), dir.file("straight/best.safetensors"));
  EXPECT_EQ(again.count, full.test.count);
  EXPECT_DOUBLE_EQ(again.top1, full.test.top1);
  EXPECT_NEAR(again.loss, full.test.loss, 1e-6);
}

TEST(SequenceTask, PathfinderGeneratedOnDiskTrainsWithMitaAndResumesExactly) {
  TempDir dir;
  data::lra::write_pathfinder_release(dir.file("data"), 3, 60);
  auto make = [&](const std::string& out) {
    io::Config c = tiny_lra_config("pathfinder", "mita", out);
    c.data.data_dir = dir.file("data");
    return c;
  };
  expect_trains_and_resumes_exactly(make, nullptr, dir);
}

TEST(SequenceTask, TextInMemoryTrainsWithRouteOnlyMitaAndEmaAndResumesExactly) {
  TempDir dir;
  const engine::LraSplits data = memory_splits("text", 257, 2);
  auto make = [&](const std::string& out) {
    io::Config c = tiny_lra_config("text", "route_only", out);
    c.train.model_ema = true;
    c.train.model_ema_decay = 0.9;
    return c;
  };
  expect_trains_and_resumes_exactly(make, &data, dir);
}

TEST(SequenceTask, RetrievalPairsInMemoryTrainTheDualEncoderAndResumeExactly) {
  TempDir dir;
  const engine::LraSplits data = memory_splits("retrieval", 257, 2);
  auto make = [&](const std::string& out) { return tiny_lra_config("retrieval", "mita", out); };
  expect_trains_and_resumes_exactly(make, &data, dir);
}

TEST(SequenceTask, ImageInMemoryTrainsWithAgentAttentionAndClsPoolingAndResumesExactly) {
  TempDir dir;
  const engine::LraSplits data = memory_splits("image", 257, 10);
  auto make = [&](const std::string& out) {
    io::Config c = tiny_lra_config("image", "agent", out);
    c.model.pooling = "cls";
    return c;
  };
  expect_trains_and_resumes_exactly(make, &data, dir);
}

double max_weight_diff(const std::string& a, const std::string& b) {
  auto ta = io::load_safetensors(a), tb = io::load_safetensors(b);
  EXPECT_EQ(ta.size(), tb.size());
  double m = 0;
  for (size_t i = 0; i < ta.size() && i < tb.size(); ++i) {
    auto va = ta[i].second.to_vector(), vb = tb[i].second.to_vector();
    for (size_t j = 0; j < va.size(); ++j) m = std::max(m, std::abs(va[j] - vb[j]));
  }
  return m;
}

// 2 ranks x batch 4 train on exactly the batches of 1 process x batch 8 (each rank its rows of the global batch):
// the weights agree to f32 rounding of the different summation order, every evaluation sequence counts once.
TEST(SequenceTask, TwoRanksOfBatch4MatchOneProcessOfBatch8) {
  TempDir dir;
  const engine::LraSplits data = memory_splits("retrieval", 257, 2);
  auto make = [&](const std::string& out, int batch) {
    io::Config c = tiny_lra_config("retrieval", "mita", out);
    c.model.drop_rate = 0.0;  // the dropout stream is per process: keep the runs comparable
    c.data.updates_per_epoch = 2;
    c.train.batch_size = batch;
    return c;
  };
  const engine::SequenceTrainSummary one = engine::train_sequence(make(dir.file("one"), 8), {}, &data);
  std::vector<engine::SequenceTrainSummary> ranks(2);
  run_ranks(2, [&](dist::ThreadCommunicator& comm) {
    engine::TrainHooks hooks;
    hooks.communicator = &comm;
    ranks[static_cast<size_t>(comm.rank())] = engine::train_sequence(make(dir.file("two"), 4), hooks, &data);
  });
  EXPECT_EQ(ranks[0].steps, one.steps);
  EXPECT_EQ(ranks[0].val.count, one.val.count);  // every validation sequence counted once across the ranks
  EXPECT_EQ(ranks[1].val.count, one.val.count);
  EXPECT_EQ(ranks[0].test.count, one.test.count);
  EXPECT_NEAR(ranks[0].val.loss, one.val.loss, 1e-4);
  EXPECT_LE(max_weight_diff(one.weights_path, ranks[0].weights_path), 1e-5);
}

TEST(SequenceTask, EveryLraConfigHoldsNystromformersRecipeAndBuildsItsModel) {
  // Nystromformer's LRA/code/lra_config.py: (batch, warmup steps, train steps, eval frequency, max length).
  struct Recipe {
    int batch;
    int64_t warmup, steps, eval_every, length;
  };
  const std::map<std::string, Recipe> recipes = {{"listops", {32, 1000, 5000, 50, 2000}},
                                                 {"text", {32, 8000, 20000, 500, 4000}},
                                                 {"retrieval", {32, 800, 30000, 300, 4000}},
                                                 {"image", {256, 175, 35000, 175, 1024}},
                                                 {"pathfinder", {256, 312, 62400, 312, 1024}}};
  int configs = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(VT_SOURCE_DIR) + "/configs/lra")) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    ++configs;
    const io::Config c = io::load_config(e.path().string());
    const Recipe& r = recipes.at(c.data.lra_task);
    EXPECT_EQ(c.train.global_batch_size, r.batch);
    EXPECT_EQ(c.data.updates_per_epoch, r.eval_every);
    EXPECT_EQ(c.train.epochs * c.data.updates_per_epoch, r.steps);
    // The loop's warmup in updates: whole updates of warmup_epochs x updates_per_epoch (engine::LrPlan).
    EXPECT_EQ(static_cast<int64_t>(c.schedule.warmup_epochs * static_cast<double>(r.eval_every)), r.warmup);
    EXPECT_EQ(c.data.max_length, r.length);
    EXPECT_DOUBLE_EQ(c.optim.lr, 1e-4);
    EXPECT_DOUBLE_EQ(c.schedule.warmup_lr, 1e-4 / 25);  // OneCycleLR's div_factor
    EXPECT_NO_THROW(engine::check_supported(c));
    const std::string stem = e.path().stem().string();
    if (stem.find("_mita") != std::string::npos) {
      EXPECT_EQ(c.model.attention.m, 128);
      EXPECT_EQ(c.model.attention.k, 128);
    }
    if (stem.find("_route_only") != std::string::npos) {
      EXPECT_EQ(c.model.attention.type, "mita_route");
      EXPECT_EQ(c.model.attention.k, 2 * c.model.attention.m);
    }
    const SequenceSet data{c.data.lra_task, {}, 257, 10, c.data.max_length};
    const models::LraClassifier model(engine::lra_model_config(c, data));
    // Embeddings, 2 blocks of dim 64 with MLP 128 (every kind has only qkv/proj), the final norm, the head
    // 64 (x4 for pairs) -> 128 -> 10.
    const int64_t head_in = data.pairs() ? 256 : 64;
    const int64_t blocks = 2 * (4 * 64 + 64 * 192 + 192 + 64 * 64 + 64 + 64 * 128 + 128 + 128 * 64 + 64);
    EXPECT_EQ(model.num_parameters(), 257 * 64 + r.length * 64 + blocks + 2 * 64 + head_in * 128 + 128 + 128 * 10 + 10);
  }
  EXPECT_EQ(configs, 20);
}

TEST(SequenceTask, PadTokensPadsTruncatesAndStacksPairs) {
  SequenceSet s{"retrieval", {}, 9, 2, 4};
  s.examples.push_back({{1, 2, 3, 4, 5}, {6}, 1});
  s.examples.push_back({{7}, {8, 8}, 0});
  const Tensor t = engine::pad_tokens(s, {1, 0}, 4);
  ASSERT_EQ(t.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(t.to_vector(), (std::vector<double>{7, 0, 0, 0, 8, 8, 0, 0, 1, 2, 3, 4, 6, 0, 0, 0}));
}

TEST(SequenceTask, TheStreamOfPassesHoldsEveryExampleOncePerPass) {
  engine::PassStream a(10, 5), b(10, 5);
  std::vector<int64_t> pass0, pass1;
  for (int64_t p = 0; p < 10; ++p) pass0.push_back(a.at(p));
  for (int64_t p = 10; p < 20; ++p) pass1.push_back(a.at(p));
  EXPECT_NE(pass0, pass1);  // each pass its own order
  for (auto* pass : {&pass0, &pass1}) {
    std::vector<int64_t> sorted = *pass;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  }
  for (int64_t p = 19; p >= 0; --p) EXPECT_EQ(b.at(p), p < 10 ? pass0[p] : pass1[p - 10]) << p;  // any order
  EXPECT_EQ(engine::PassStream(10, 6).at(0) == pass0[0] && engine::PassStream(10, 6).at(1) == pass0[1] &&
                engine::PassStream(10, 6).at(2) == pass0[2],
            false);  // another seed, another order
}

TEST(SequenceTask, ConfigAndRecipeErrorsNameTheKeys) {
  TempDir dir;
  const std::string lra = std::string(VT_SOURCE_DIR) + "/configs/lra/listops_dense.yaml";
  expect_error([&] { io::load_config(lra, {"data.dataset=imagenet"}); }, "data.lra_task");
  expect_error([&] { io::load_config(lra, {"data.lra_task=cifar"}); }, "data.lra_task");
  expect_error([&] { io::load_config(lra, {"model.pooling=max"}); }, "model.pooling");
  expect_error([&] { io::load_config(lra, {"data.updates_per_epoch=-1"}); }, "data.updates_per_epoch");
  expect_error([&] { io::load_config(std::string(VT_SOURCE_DIR) + "/tests/fmnist_base.yaml", {"model.pooling=mean"}); },
               "model.pooling");
  expect_error(
      [&] {
        io::load_config(lra, {"model.attention.type=agent_bias", "model.attention.landmark_pool=sequence"});
      },
      "goes with type agent, not agent_bias");
  const engine::LraSplits data = memory_splits("listops", 16, 10);
  io::Config c = tiny_lra_config("listops", "mita", dir.file("bad"));
  c.model.attention.landmark_pool = "shifted";
  expect_error([&] { engine::train_sequence(c, {}, &data); }, "model.attention.landmark_pool: shifted");
  c = tiny_lra_config("listops", "dense", dir.file("bad"));
  c.model.attention.type = "agent_bias";
  expect_error([&] { engine::train_sequence(c, {}, &data); }, "model.attention.type: agent_bias");
  c.model.attention.type = "bra";
  expect_error([&] { engine::train_sequence(c, {}, &data); }, "model.attention.type: bra");
  c = tiny_lra_config("listops", "dense", dir.file("bad"));
  c.data.mixup = 0.8;
  c.model.drop_path_rate = 0.1;
  expect_error([&] { engine::train_sequence(c, {}, &data); }, "data.mixup/cutmix, model.drop_path_rate");
  c = tiny_lra_config("listops", "dense", dir.file("bad"));
  c.model.embed_dim = 0;
  expect_error([&] { engine::train_sequence(c, {}, &data); }, "model.embed_dim");
  c = tiny_lra_config("listops", "dense", dir.file("bad"));
  c.train.batch_size = 64;  // 40 sequences
  expect_error([&] { engine::train_sequence(c, {}, &data); }, "make no global batch");
  engine::LraSplits no_val = data;
  no_val.val.examples.clear();
  expect_error([&] { engine::train_sequence(tiny_lra_config("listops", "dense", dir.file("bad")), {}, &no_val); },
               "val split under '' has no examples");
  engine::LraSplits other_classes = data;
  other_classes.test.num_classes = 3;
  expect_error(
      [&] { engine::train_sequence(tiny_lra_config("listops", "dense", dir.file("bad")), {}, &other_classes); },
      "test split under '' has vocabulary 16 and 3 classes, the training split 16 and 10");
  c = tiny_lra_config("listops", "dense", dir.file("bad"));
  c.data.data_dir = dir.file("missing");
  expect_error([&] { engine::train_sequence(c); }, "missing");
}

}  // namespace
}  // namespace vt::test
