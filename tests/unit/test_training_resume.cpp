// The training engine on a tiny model: exact resume (mid-epoch and across epochs, bit for bit on the CPU),
// gradient accumulation, the non-finite loss stop, checkpoint rejection (truncated, foreign, shape mismatch)
// and checkpoint atomicity under SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "test_util.h"
#include "engine/checkpoint.h"
#include "engine/resume.h"
#include "engine/trainer.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "io_temp_dir.h"
#include "training_runs.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

bool have_data() { return fs::exists(vt::test::fmnist_dir()); }

void expect_same_tensors(const std::string& a, const std::string& b) {
  auto ta = io::load_safetensors(a), tb = io::load_safetensors(b);
  ASSERT_EQ(ta.size(), tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    ASSERT_EQ(ta[i].first, tb[i].first);
    const size_t n = static_cast<size_t>(ta[i].second.numel()) * dtype_size(ta[i].second.dtype());
    ASSERT_EQ(ta[i].second.shape(), tb[i].second.shape());
    EXPECT_EQ(0, std::memcmp(ta[i].second.raw_data(), tb[i].second.raw_data(), n)) << ta[i].first << " differs";
  }
}

TEST(TrainingResume, StopMidEpochAndResumeGivesTheSameLossesBitForBit) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  const io::Config straight = tiny_training_config(dir.file("straight"));
  engine::TrainSummary full;
  const auto expected = run_losses(straight, &full);
  ASSERT_EQ(expected.size(), 12u);
  EXPECT_EQ(full.steps, 12);

  io::Config cfg = tiny_training_config(dir.file("resumed"));
  std::map<int64_t, double> got;
  for (int64_t stop : {4, 9, 0}) {  // mid epoch 1, mid epoch 2 (after an epoch end), then to the end
    cfg.train.max_steps = stop;
    engine::TrainSummary s;
    for (auto [k, v] : run_losses(cfg, &s)) got[k] = v;
    EXPECT_EQ(s.stopped_at_max_steps, stop != 0);
    cfg.train.resume = "auto";
  }
  ASSERT_EQ(got.size(), expected.size());
  for (auto [k, v] : expected) EXPECT_EQ(got[k], v) << "update " << k;  // exact: same bits
  expect_same_tensors(dir.file("straight/model.safetensors"), dir.file("resumed/model.safetensors"));
  expect_same_tensors(dir.file("straight/last.safetensors"), dir.file("resumed/last.safetensors"));
  // The run files: summary.csv rebuilt on each resume equals the straight run's (timm's columns, EMA included);
  // train.log was appended to by all three starts; each start wrote its own TensorBoard event file.
  const std::string summary = read_file(dir.file("straight/summary.csv"));
  EXPECT_EQ(summary.substr(0, summary.find('\n')),
            "epoch,train_loss,eval_loss,eval_top1,eval_top5,ema_eval_loss,ema_eval_top1,ema_eval_top5,lr");
  EXPECT_EQ(occurrences(summary, "\n"), 3);  // header + epochs 0 and 1
  EXPECT_EQ(read_file(dir.file("resumed/summary.csv")), summary);
  EXPECT_EQ(occurrences(read_file(dir.file("resumed/train.log")), "device: "), 3);
  int event_files = 0;
  for (const auto& e : fs::directory_iterator(dir.file("resumed")))
    event_files += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  EXPECT_EQ(event_files, 3);
}

TEST(TrainingResume, RecoveryCheckpointsResumeExactlyAndAutoPicksTheNewest) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config cfg = tiny_training_config(dir.file("run"));
  cfg.train.epochs = 1;
  cfg.train.recovery_interval = 2;
  cfg.train.max_steps = 5;  // the recovery written at update 4, then the stop's at 5
  run_losses(cfg);
  EXPECT_EQ(engine::checkpoint_global_step(dir.file("run/recovery.safetensors")), 5);
  EXPECT_FALSE(fs::exists(dir.file("run/last.safetensors")));
  EXPECT_EQ(engine::find_resume_checkpoint(dir.file("run")), dir.file("run/recovery.safetensors"));
  cfg.train.max_steps = 0;
  cfg.train.resume = "auto";
  const auto tail = run_losses(cfg);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail.begin()->first, 6);
  EXPECT_EQ(engine::find_resume_checkpoint(dir.file("run")), dir.file("run/last.safetensors"));
  EXPECT_TRUE(fs::exists(dir.file("run/best.safetensors")));
  EXPECT_TRUE(fs::exists(dir.file("run/checkpoint-1.safetensors")));
}

TEST(TrainingResume, RecoveryMinutesWriteATimedRecoveryCheckpointThatResumesExactly) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config off = tiny_training_config(dir.file("off"));
  off.train.recovery_minutes = 0;
  const auto expected = run_losses(off);
  EXPECT_FALSE(fs::exists(dir.file("off/recovery.safetensors")));
  // Due before every update: the last one is written before update 12, the run's last.
  io::Config cfg = tiny_training_config(dir.file("timed"));
  cfg.train.recovery_minutes = 1e-9;
  cfg.train.checkpoint_interval = 0;  // no checkpoint-<epoch> files for --resume auto to prefer
  run_losses(cfg);
  ASSERT_EQ(engine::checkpoint_global_step(dir.file("timed/recovery.safetensors")), 11);
  expect_same_tensors(dir.file("off/model.safetensors"), dir.file("timed/model.safetensors"));
  // Resumed from it (last removed), the run redoes update 12 with the same loss and weights.
  fs::remove(dir.file("timed/last.safetensors"));
  cfg.train.resume = "auto";
  const auto redone = run_losses(cfg);
  ASSERT_EQ(redone.size(), 1u);
  EXPECT_EQ(redone.at(12), expected.at(12));
  expect_same_tensors(dir.file("off/model.safetensors"), dir.file("timed/model.safetensors"));
}

TEST(TrainingResume, AutoFallsBackToTheNewestEpochCheckpointWhenLastIsDamaged) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  run_losses(tiny_training_config(dir.file("run")));  // last, checkpoint-1, checkpoint-2; no recovery
  const std::string last = dir.file("run/last.safetensors");
  fs::resize_file(last, fs::file_size(last) - 100);
  const engine::ResumeChoice choice = engine::choose_resume_checkpoint(dir.file("run"));
  EXPECT_EQ(choice.path, dir.file("run/checkpoint-2.safetensors"));
  EXPECT_EQ(choice.checkpoint.state.position.global_step, 12);
  ASSERT_EQ(choice.skipped.size(), 1u);
  EXPECT_NE(choice.skipped[0].find(last + ": "), std::string::npos) << choice.skipped[0];
}

// A checkpoint that verifies but lacks one of the model's tensors stops the resume naming the file and the tensor.
TEST(TrainingResume, ACheckpointMissingATensorIsAnErrorNamingTheFile) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config cfg = tiny_training_config(dir.file("run"));
  cfg.train.max_steps = 4;
  run_losses(cfg);  // stops at max_steps with recovery.safetensors
  const std::string last = dir.file("run/recovery.safetensors");
  engine::Checkpoint ckpt = engine::load_checkpoint(last);
  const std::string dropped = ckpt.model.back().first;
  ckpt.model.pop_back();
  engine::save_checkpoint(last, ckpt);
  cfg.train.max_steps = 0;
  cfg.train.resume = last;
  try {
    run_losses(cfg);
    ADD_FAILURE() << "resuming from a checkpoint without '" << dropped << "' succeeded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(last), std::string::npos) << msg;
    EXPECT_NE(msg.find(dropped), std::string::npos) << msg;
  }
}

TEST(TrainingResume, RewindMetricsDropsTheRowsPastTheCheckpointAndCutLines) {
  TempDir dir;
  const std::string path = dir.file("metrics.jsonl");
  write_bytes(path,
              "{\"epoch\": 1, \"step\": 5, \"train_loss\": 2.1}\n"
              "{\"epoch\": 1, \"step\": 6, \"train_loss\": 2}\n"
              "{\"epoch\": 1, \"step\": 6, \"test_top1\": 10}\n"
              "{\"epoch\": 2, \"step\": 7, \"train_loss\": 1.9}\n"
              "{\"epoch\": 2, \"step\": 12, \"test_top1\": 20}\n"
              "{\"epoch\": 3, \"step\": 13, \"train_lo");
  engine::CheckpointState at_epoch_end;  // `last` after epoch 1: 6 updates, 1 epoch complete
  at_epoch_end.position = {1, 0, 6};
  EXPECT_EQ(engine::rewind_metrics(path, at_epoch_end), 3);
  EXPECT_EQ(read_file(path),
            "{\"epoch\": 1, \"step\": 5, \"train_loss\": 2.1}\n"
            "{\"epoch\": 1, \"step\": 6, \"train_loss\": 2}\n"
            "{\"epoch\": 1, \"step\": 6, \"test_top1\": 10}\n");
  engine::CheckpointState before_eval;  // a recovery checkpoint after update 6, before epoch 1's evaluation
  before_eval.position = {0, 6, 6};
  EXPECT_EQ(engine::rewind_metrics(path, before_eval), 1);
  EXPECT_EQ(occurrences(read_file(path), "test_top1"), 0);
  EXPECT_EQ(engine::rewind_metrics(dir.file("absent.jsonl"), before_eval), 0);
}

TEST(TrainingResume, GradientAccumulationMatchesTheLargeBatch) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config big = tiny_training_config(dir.file("big"));
  big.model.drop_path_rate = 0;  // the micro-batches would draw other drop-path masks
  big.train.epochs = 1;
  big.train.model_ema = false;
  io::Config small = big;
  small.train.output = dir.file("small");
  small.train.batch_size = 8;
  small.train.grad_accum_steps = 2;
  const auto a = run_losses(big), b = run_losses(small);
  ASSERT_EQ(a.size(), b.size());
  for (auto [k, v] : a) EXPECT_NEAR(b.at(k), v, 1e-5) << "update " << k;
}

TEST(TrainingResume, NonFiniteLossStopsAndLeavesTheLastCheckpointLoadable) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config cfg = tiny_training_config(dir.file("run"));
  cfg.train.epochs = 1;
  run_losses(cfg);
  cfg.train.epochs = 2;
  cfg.train.resume = "auto";
  cfg.optim.lr = 1e30;  // the weights overflow at once
  cfg.schedule.warmup_epochs = 0;
  expect_error([&] { run_losses(cfg); }, "non-finite loss");
  EXPECT_EQ(engine::checkpoint_global_step(dir.file("run/last.safetensors")), 6);
  EXPECT_FALSE(fs::exists(dir.file("run/recovery.safetensors")));
}

TEST(Checkpoint, RejectsTruncatedForeignAndMismatchedFilesNamingTheProblem) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config cfg = tiny_training_config(dir.file("run"));
  cfg.train.max_steps = 1;
  run_losses(cfg);
  const std::string good = dir.file("run/recovery.safetensors");
  EXPECT_EQ(engine::load_checkpoint(good).state.position.global_step, 1);

  const std::string bytes = read_bytes(good);
  write_bytes(dir.file("cut.safetensors"), bytes.substr(0, bytes.size() / 2));
  expect_error([&] { engine::load_checkpoint(dir.file("cut.safetensors")); }, "truncated");
  io::save_safetensors(dir.file("weights.safetensors"), engine::load_checkpoint(good).model);
  expect_error([&] { engine::load_checkpoint(dir.file("weights.safetensors")); }, "not a vitrain training checkpoint");
  write_bytes(dir.file("junk.safetensors"), "hello, world");
  expect_error([&] { engine::load_checkpoint(dir.file("junk.safetensors")); }, "junk.safetensors");

  io::Config other = tiny_training_config(dir.file("other"));
  other.model.embed_dim = 48;
  other.model.num_heads = 3;
  other.train.resume = good;
  expect_error([&] { run_losses(other); }, "tensor '");
}

// A child process rewrites one checkpoint in a loop and is killed with SIGKILL at an arbitrary point; the file
// must then hold one complete version.
TEST(Checkpoint, SigkillDuringASaveLoopLeavesAValidCheckpoint) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  auto version = [](int64_t v) {
    engine::Checkpoint c;
    Tensor w = Tensor::empty({1 << 20}, DType::f32);  // 4 MiB, so a kill often lands mid-write
    w.fill_(static_cast<double>(v));
    c.model.emplace_back("w", w);
    c.state.position.global_step = v;
    return c;
  };
  engine::save_checkpoint(path, version(0));
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int64_t v = 1;; ++v) {
      engine::save_checkpoint(path, version(v));
      if (v == 2) (void)!write(ready[1], "x", 1);
    }
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  usleep(30000);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(ready[0]);
  close(ready[1]);
  const engine::Checkpoint loaded = engine::load_checkpoint(path);
  const int64_t v = loaded.state.position.global_step;
  EXPECT_GE(v, 2);
  ASSERT_EQ(loaded.model.size(), 1u);
  const float* w = loaded.model[0].second.data<float>();
  for (int64_t i = 0; i < loaded.model[0].second.numel(); i += 4097) ASSERT_EQ(w[i], static_cast<float>(v));
}

}  // namespace
}  // namespace vt::test
