// Segmentation end to end on a generated mini-ADE20K, on the CPU: a tiny Segmenter (configs/ade20k/vit_tiny_*.yaml
// shrunk: 32² crops, patch 8 → 4×4 patches, 2 blocks of width 48, CBT with 2 heads × 8 dims and 2×2
// representatives) starts from timm-format backbone weights at another resolution (pos_embed resampled, head
// skipped), trains a few SGD-Nesterov + poly updates, evaluates the validation split with the sliding window,
// writes its checkpoints; `vitrain seg-eval` prints mIoU and `vitrain viz seg` writes a PNG; the MiTA variant
// trains too; data.max_image_pixels applies to the training images; a run stopped by train.max_steps and resumed
// matches the uninterrupted one bit for bit.
// Data parallel (ranks as threads, dist::ThreadCommunicator): a 1-rank job takes the DDP path and changes no bit;
// 2 ranks × batch 2 make the updates of 1 process × batch 4 (each rank its shard, its own augmentations, so the
// losses differ from the single process's), log the mean of the ranks' losses, evaluate the validation split
// split over the ranks with exactly the scores of one process evaluating the saved weights, write checkpoints in
// the single-process format, and resume bit for bit; the distributed evaluation alone equals one process's for
// 2 and 4 ranks (3 images: a rank may have none).
#include <gtest/gtest.h>

#include <csignal>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/run_vitrain.h"
#include "data/mini_ade20k.h"
#include "ddp_runs.h"
#include "engine/checkpoint.h"
#include "engine/seg_evaluate.h"
#include "engine/seg_trainer.h"
#include "engine/timm_weights.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "models/segmenter.h"
#include "test_util.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

struct SegE2E : ::testing::Test {
  fs::path dir, data;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("vt_e2e_seg_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    data = write_mini_ade20k((dir / "data").string());
  }
  void TearDown() override { fs::remove_all(dir); }

  // A Table 4 config shrunk to the mini dataset.
  io::Config shrunk(const std::string& config, const std::string& out, std::vector<std::string> extra = {}) const {
    return mini_segmenter_config(config, data.string(), out, extra);
  }
};

TEST_F(SegE2E, TrainsFromTimmWeightsEvaluatesAndDraws) {
  const fs::path out = dir / "dense";
  io::Config cfg = shrunk("vit_tiny_dense.yaml", out.string());
  // timm-format backbone weights at 24² (3×3 patches) with a 10-class head: pos_embed resampled to 4×4, head skipped.
  models::ViTConfig timm_arch = models::segmenter_config(cfg.model, 7).backbone;
  timm_arch.img_size = 24;
  timm_arch.num_classes = 10;
  const fs::path timm_path = dir / "vit_timm.safetensors";
  io::save_safetensors(timm_path.string(), engine::export_timm_weights(models::VisionTransformer(timm_arch)));
  cfg.model.initial_checkpoint = timm_path.string();

  std::vector<double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t, double loss) { losses.push_back(loss); };
  const engine::SegTrainSummary s = engine::train_segmentation(cfg, hooks);
  ASSERT_EQ(losses.size(), 6u);  // 8 training images / batch 4 × 3 epochs
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(*std::min_element(losses.begin() + 1, losses.end()), losses.front());
  EXPECT_EQ(s.steps, 6);
  EXPECT_EQ(s.test.images, 3);
  EXPECT_TRUE(std::isfinite(s.test.scores.miou));
  EXPECT_GE(s.best_epoch, 2);  // evaluated after epochs 2 and 3
  for (const char* f : {"last.safetensors", "best.safetensors", "model.safetensors", "train.log", "config.yaml"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const std::string log = read_file(out / "train.log");
  EXPECT_NE(log.find("backbone " + timm_path.string()), std::string::npos) << log;
  const std::string metrics = read_file(out / "metrics.jsonl");
  EXPECT_NE(metrics.find("\"miou\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"train_loss\""), std::string::npos) << metrics;

  // The CLI: seg-eval on the validation split, then the picture of one validation image.
  const fs::path yaml = out / "config.yaml";  // the run's resolved config
  const CliRun eval =
      run_vitrain("seg-eval -c '" + yaml.string() + "' -w '" + (out / "model.safetensors").string() + "' --device cpu");
  EXPECT_EQ(eval.code, 0) << eval.output;
  EXPECT_NE(eval.output.find("mIoU"), std::string::npos) << eval.output;
  const fs::path png = dir / "viz.png";
  const fs::path image = data / "images" / "validation" / "ADE_val_00000001.jpg";
  const fs::path label = data / "annotations" / "validation" / "ADE_val_00000001.png";
  const CliRun viz =
      run_vitrain("viz seg -c '" + yaml.string() + "' -w '" + (out / "model.safetensors").string() + "' --image '" +
                  image.string() + "' --label '" + label.string() + "' -o '" + png.string() + "'");
  EXPECT_EQ(viz.code, 0) << viz.output;
  ASSERT_TRUE(fs::exists(png)) << viz.output;
  EXPECT_EQ(read_file(png).substr(1, 3), "PNG");

  // `vitrain train` with a decoder config runs this loop too.
  const CliRun train = run_vitrain("train -c '" + yaml.string() + "' --set train.epochs=1 --set train.output='" +
                                   (dir / "cli").string() + "'");
  EXPECT_EQ(train.code, 0) << train.output;
  EXPECT_NE(train.output.find("validation mIoU"), std::string::npos) << train.output;
}

TEST_F(SegE2E, MitaBackboneTrainsAndEvaluates) {
  std::vector<double> losses;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t, double loss) { losses.push_back(loss); };
  const engine::SegTrainSummary s =
      engine::train_segmentation(shrunk("vit_tiny_mita.yaml", (dir / "mita").string(), {"train.epochs=1"}), hooks);
  ASSERT_EQ(losses.size(), 2u);
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_EQ(s.test.images, 3);
  EXPECT_TRUE(std::isfinite(s.test.scores.miou));
}

TEST_F(SegE2E, TrainingHonoursTheConfiguredPixelLimit) {
  // Every mini-ADE20K image has more than 100 pixels: with no bad file allowed the first one stops the run.
  const io::Config cfg = shrunk("vit_tiny_mita.yaml", (dir / "limit").string(),
                                {"train.epochs=1", "data.max_image_pixels=100", "data.max_bad_files=0"});
  const std::string err = error_of([&] { engine::train_segmentation(cfg); });
  EXPECT_CONTAINS(err, data.string() + "/images/training/ADE_train_");
  EXPECT_CONTAINS(err, "more than data.max_image_pixels = 100");
}

TEST_F(SegE2E, StoppedAndResumedRunMatchesTheUninterruptedOne) {
  auto run = [&](const std::string& out, std::vector<std::string> extra, std::vector<double>& losses) {
    engine::TrainHooks hooks;
    hooks.on_update = [&](int64_t, double loss) { losses.push_back(loss); };
    extra.push_back("train.epochs=2");
    extra.push_back("data.test_limit=1");
    return engine::train_segmentation(shrunk("vit_tiny_dense.yaml", out, extra), hooks);
  };
  std::vector<double> full, first, second;
  run((dir / "full").string(), {}, full);
  const engine::SegTrainSummary stopped = run((dir / "split").string(), {"train.max_steps=3"}, first);
  EXPECT_TRUE(stopped.stopped_at_max_steps);
  run((dir / "split").string(), {"train.resume=auto"}, second);
  ASSERT_EQ(full.size(), 4u);
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(second.size(), 1u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(first[i], full[i]) << i;
  EXPECT_EQ(second[0], full[3]);
  const io::NamedTensors a = io::load_safetensors((dir / "full" / "model.safetensors").string());
  const io::NamedTensors b = io::load_safetensors((dir / "split" / "model.safetensors").string());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.to_vector(), b[i].second.to_vector()) << a[i].first;
  }
}

// A stop signal (SIGUSR1, SLURM's pre-emption warning) after update 3: the loop writes its recovery checkpoint and
// returns the signal; the resumed run ends with the uninterrupted weights.
TEST_F(SegE2E, SignalStoppedRunResumesToTheUninterruptedWeights) {
  auto config = [&](const std::string& out, const std::string& resume) {
    std::vector<std::string> extra{"train.epochs=2", "data.test_limit=1"};
    if (!resume.empty()) extra.push_back("train.resume=" + resume);
    return shrunk("vit_tiny_dense.yaml", out, extra);
  };
  engine::train_segmentation(config((dir / "whole").string(), ""));
  int64_t done = 0;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t step, double) { done = step; };
  hooks.stop_signal = [&] { return done >= 3 ? SIGUSR1 : 0; };
  const engine::SegTrainSummary stopped = engine::train_segmentation(config((dir / "signal").string(), ""), hooks);
  EXPECT_EQ(stopped.stop_signal, SIGUSR1);
  EXPECT_EQ(stopped.steps, 3);
  EXPECT_FALSE(stopped.stopped_at_max_steps);
  EXPECT_EQ(engine::train_segmentation(config((dir / "signal").string(), "auto")).stop_signal, 0);
  const io::NamedTensors a = io::load_safetensors((dir / "whole" / "model.safetensors").string());
  const io::NamedTensors b = io::load_safetensors((dir / "signal" / "model.safetensors").string());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].second.to_vector(), b[i].second.to_vector()) << a[i].first;
}

// Same numbers; NaN (an undefined class) equals NaN.
void expect_same_scores(const engine::SegScores& a, const engine::SegScores& b) {
  auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  EXPECT_TRUE(same(a.miou, b.miou)) << a.miou << " vs " << b.miou;
  EXPECT_TRUE(same(a.macc, b.macc)) << a.macc << " vs " << b.macc;
  EXPECT_TRUE(same(a.aacc, b.aacc)) << a.aacc << " vs " << b.aacc;
  ASSERT_EQ(a.iou.size(), b.iou.size());
  for (size_t c = 0; c < a.iou.size(); ++c) {
    EXPECT_TRUE(same(a.iou[c], b.iou[c])) << "IoU of class " << c;
    EXPECT_TRUE(same(a.acc[c], b.acc[c])) << "Acc of class " << c;
  }
}

void expect_same_tensors(const fs::path& a_path, const fs::path& b_path) {
  const io::NamedTensors a = io::load_safetensors(a_path.string()), b = io::load_safetensors(b_path.string());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.to_vector(), b[i].second.to_vector()) << a[i].first;
  }
}

// train_segmentation as `world` ranks in threads: every rank's summary and on_update losses.
std::vector<engine::SegTrainSummary> train_seg_ranks(const io::Config& cfg, int world,
                                                     std::vector<std::vector<double>>* losses = nullptr) {
  std::vector<engine::SegTrainSummary> summaries(static_cast<size_t>(world));
  if (losses) losses->assign(static_cast<size_t>(world), {});
  run_ranks(world, [&](dist::ThreadCommunicator& comm) {
    engine::TrainHooks hooks;
    hooks.communicator = &comm;
    if (losses)
      hooks.on_update = [&, r = comm.rank()](int64_t, double l) { (*losses)[static_cast<size_t>(r)].push_back(l); };
    summaries[static_cast<size_t>(comm.rank())] = engine::train_segmentation(cfg, hooks);
  });
  return summaries;
}

TEST_F(SegE2E, OneRankJobMatchesThePlainRunBitwise) {
  const std::vector<std::string> extra = {"train.epochs=1", "data.test_limit=1", "model.drop_path_rate=0"};
  std::vector<double> plain, job;
  engine::TrainHooks hooks;
  hooks.on_update = [&](int64_t, double l) { plain.push_back(l); };
  engine::train_segmentation(shrunk("vit_tiny_dense.yaml", (dir / "plain").string(), extra), hooks);
  dist::ThreadCommunicator comm(std::make_shared<dist::ThreadGroup>(1), 0);
  hooks.communicator = &comm;
  hooks.on_update = [&](int64_t, double l) { job.push_back(l); };
  engine::train_segmentation(shrunk("vit_tiny_dense.yaml", (dir / "job").string(), extra), hooks);
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(job, plain);
  expect_same_tensors(dir / "plain" / "model.safetensors", dir / "job" / "model.safetensors");
}

TEST_F(SegE2E, TwoRanksTrainEvaluateCheckpointAndResumeLikeOneProcess) {
  // drop_path 0: the drop-path stream is per process (as the classification DDP tests).
  const std::vector<std::string> common = {"train.epochs=2", "model.drop_path_rate=0", "train.checkpoint_interval=1"};
  auto config = [&](const std::string& out, int batch, std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), common.begin(), common.end());
    extra.push_back("train.batch_size=" + std::to_string(batch));
    return shrunk("vit_tiny_dense.yaml", (dir / out).string(), extra);
  };
  const engine::SegTrainSummary one = engine::train_segmentation(config("one", 4));
  std::vector<std::vector<double>> losses;
  const std::vector<engine::SegTrainSummary> two = train_seg_ranks(config("two", 2), 2, &losses);
  EXPECT_EQ(two[0].steps, one.steps);  // 8 images: 2 updates per epoch either way
  ASSERT_EQ(losses[0].size(), 4u);
  ASSERT_EQ(losses[1].size(), 4u);
  EXPECT_NE(losses[0], losses[1]);  // disjoint shards
  for (const auto& s : two) {       // every rank ends with the same scores over all 3 images and the same best epoch
    EXPECT_EQ(s.test.images, 3);
    expect_same_scores(s.test.scores, two[0].test.scores);
    EXPECT_EQ(s.best_epoch, two[0].best_epoch);
    EXPECT_EQ(s.best_metric, two[0].best_metric);
  }
  // The distributed evaluation after the last epoch is the single-process evaluation of the saved weights.
  const io::Config two_cfg = config("two", 2);
  const auto model = engine::load_segmenter_weights(two_cfg, (dir / "two" / "model.safetensors").string(), cpu());
  const engine::SegEvalResult single = engine::evaluate_segmentation(
      *model, data::ade20k(two_cfg.data.data_dir, "validation"), engine::seg_eval_options(two_cfg), cpu());
  expect_same_scores(two[0].test.scores, single.scores);
  // The logged loss of each update is the mean of the ranks' losses.
  std::istringstream metrics(read_file(dir / "two" / "metrics.jsonl"));
  std::vector<double> logged;
  for (std::string line; std::getline(metrics, line);)
    if (const size_t at = line.find("\"train_loss\":"); at != std::string::npos)
      logged.push_back(std::stod(line.substr(at + 13)));
  ASSERT_EQ(logged.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(logged[i], (losses[0][i] + losses[1][i]) / 2, 1e-6 * logged[i]) << i;
  // Rank 0 alone writes; the checkpoints hold the single-process run's tensors.
  for (const char* f : {"last.safetensors", "best.safetensors", "model.safetensors", "train.log", "config.yaml"})
    EXPECT_TRUE(fs::exists(dir / "two" / f)) << f;
  const io::NamedTensors a = io::load_safetensors((dir / "one" / "last.safetensors").string());
  const io::NamedTensors b = io::load_safetensors((dir / "two" / "last.safetensors").string());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.shape(), b[i].second.shape()) << a[i].first;
  }
  // Stopped after 3 updates and resumed: the uninterrupted run's losses and weights, bit for bit.
  std::vector<std::vector<double>> first, second;
  EXPECT_TRUE(train_seg_ranks(config("split", 2, {"train.max_steps=3"}), 2, &first)[0].stopped_at_max_steps);
  train_seg_ranks(config("split", 2, {"train.resume=auto"}), 2, &second);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(first[r].size(), 3u);
    ASSERT_EQ(second[r].size(), 1u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(first[r][i], losses[r][i]) << r << " " << i;
    EXPECT_EQ(second[r][0], losses[r][3]) << r;
  }
  expect_same_tensors(dir / "two" / "model.safetensors", dir / "split" / "model.safetensors");
}

TEST_F(SegE2E, DistributedEvaluationEqualsOneProcess) {
  const io::Config cfg = shrunk("vit_tiny_dense.yaml", (dir / "unused").string());
  const std::vector<data::SegmentationPair> pairs = data::ade20k(cfg.data.data_dir, "validation");
  const engine::SegEvalOptions opt = engine::seg_eval_options(cfg);
  auto model = [&] {  // the same initial weights on every rank (a fresh model per thread)
    auto m = std::make_unique<models::Segmenter>(models::segmenter_config(cfg.model, 5));
    m->eval();
    return m;
  };
  const engine::SegEvalResult single = engine::evaluate_segmentation(*model(), pairs, opt, cpu());
  for (int world : {2, 4}) {
    std::vector<engine::SegEvalResult> results(static_cast<size_t>(world));
    run_ranks(world, [&](dist::ThreadCommunicator& comm) {
      results[static_cast<size_t>(comm.rank())] = engine::evaluate_segmentation(*model(), pairs, opt, cpu(), &comm);
    });
    for (const auto& r : results) {
      EXPECT_EQ(r.images, single.images) << world;
      expect_same_scores(r.scores, single.scores);
    }
  }
}

// Gradient accumulation in segmentation: with a learning rate too small to move any weight, an update of 2 micro-
// batches of 2 reports the mean of their losses, which a run of batch 2 sees as two consecutive updates (the same
// batches, the same drop-path draws in the same order).
TEST_F(SegE2E, AnAccumulatedUpdateIsTheMeanOfItsMicroBatches) {
  auto run = [&](const std::string& out, int accum) {
    std::vector<double> losses;
    engine::TrainHooks hooks;
    hooks.on_update = [&](int64_t, double loss) { losses.push_back(loss); };
    engine::train_segmentation(shrunk("vit_tiny_dense.yaml", (dir / out).string(),
                                      {"train.epochs=2", "data.test_limit=1", "train.batch_size=2", "optim.lr=1e-30",
                                       "schedule.min_lr=0", "train.grad_accum_steps=" + std::to_string(accum)}),
                               hooks);
    return losses;
  };
  const std::vector<double> plain = run("plain", 1), accumulated = run("accumulated", 2);
  ASSERT_EQ(plain.size(), 8u);  // 8 images / 2 per micro-batch × 2 epochs
  ASSERT_EQ(accumulated.size(), 4u);
  for (size_t k = 0; k < accumulated.size(); ++k) {
    const double mean = 0.5 * (plain[2 * k] + plain[2 * k + 1]);
    EXPECT_NEAR(accumulated[k], mean, 1e-6 * std::abs(mean)) << "update " << k + 1;
  }
  EXPECT_NE(plain[0], plain[1]);  // the two micro-batches differ, so the mean says which were used
}

// The EMA in segmentation, with gradient accumulation: evaluated beside the model (log line and metrics row),
// saved in the checkpoints, and a run stopped mid-epoch by train.max_steps resumes to the uninterrupted run's
// losses, weights, EMA weights and optimizer state bit for bit.
TEST_F(SegE2E, EmaAndAccumulationResumeExactly) {
  auto run = [&](const std::string& out, std::vector<std::string> extra, std::vector<double>& losses) {
    engine::TrainHooks hooks;
    hooks.on_update = [&](int64_t, double loss) { losses.push_back(loss); };
    for (const char* e : {"train.epochs=2", "data.test_limit=1", "train.batch_size=2", "train.grad_accum_steps=2",
                          "train.model_ema=true", "train.model_ema_decay=0.5"})
      extra.push_back(e);
    return engine::train_segmentation(shrunk("vit_tiny_dense.yaml", (dir / out).string(), extra), hooks);
  };
  std::vector<double> full, first, second;
  run("full", {}, full);
  EXPECT_TRUE(run("split", {"train.max_steps=1"}, first).stopped_at_max_steps);  // mid-epoch: micro-batch 3 next
  run("split", {"train.resume=auto"}, second);
  ASSERT_EQ(full.size(), 4u);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(first[0], full[0]);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(second[i], full[i + 1]) << i;
  expect_same_tensors(dir / "full" / "last.safetensors", dir / "split" / "last.safetensors");

  const engine::Checkpoint last = engine::load_checkpoint((dir / "full" / "last.safetensors").string());
  ASSERT_EQ(last.ema.size(), last.model.size());
  bool differs = false;  // decay 0.5 over 4 updates: the average is not the model
  for (size_t i = 0; i < last.ema.size(); ++i)
    differs = differs || last.ema[i].second.to_vector() != last.model[i].second.to_vector();
  EXPECT_TRUE(differs);
  const std::string metrics = read_file(dir / "full" / "metrics.jsonl");
  EXPECT_NE(metrics.find("\"ema_miou\""), std::string::npos) << metrics;
  const std::string log = read_file(dir / "full" / "train.log");
  EXPECT_NE(log.find("; EMA mIoU "), std::string::npos) << log;
}

}  // namespace
}  // namespace vt::test
