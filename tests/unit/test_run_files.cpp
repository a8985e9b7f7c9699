// The files of a run beside metrics.jsonl: TensorBoard event files (read back by tests/scripts/read_tfevents.py,
// a reader that shares no code with the writer), timm's summary.csv, the run folder's -1, -2 suffixes and
// train.log appended to on resume.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "engine/run_dir.h"
#include "engine/run_record.h"
#include "engine/run_support.h"
#include "io/tensorboard.h"
#include "io_temp_dir.h"
#include "test_util.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

struct ReadBack {
  int code = -1;
  std::string output;
};

// read_tfevents.py on `path`: its exit code and stdout + stderr.
ReadBack read_events(const std::string& path) {
  const std::string cmd =
      "python3 " + std::string(VT_SOURCE_DIR) + "/tests/scripts/read_tfevents.py '" + path + "' 2>&1";
  ReadBack r;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p.get())) > 0;) r.output.append(buf, n);
  const int status = pclose(p.release());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::vector<std::string> event_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TensorBoard, Crc32cMatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(io::crc32c("123456789"), 0xE3069283u);  // the standard check value of CRC-32C
  EXPECT_EQ(io::crc32c(""), 0u);
  const uint32_t c = io::crc32c("abc");
  EXPECT_EQ(io::masked_crc32c("abc"), ((c >> 15) | (c << 17)) + 0xa282ead8u);
  EXPECT_EQ(io::tfrecord("xyz").size(), 8u + 4u + 3u + 4u);
}

TEST(TensorBoard, AnIndependentReaderDecodesTheScalarsAndChecksEveryCrc) {
  TempDir dir;
  std::string path;
  {
    io::EventFileWriter w(dir.path().string());
    path = w.path();
    w.add_scalars(1, {{"train/loss", 2.5f}, {"train/lr", 1e-4f}});
    w.add_scalars(300, {{"train/loss", 0.125f}});
    w.add_scalars(300, {});                             // nothing: no record
    w.add_scalars(1LL << 40, {{"eval/top1", 71.25f}});  // a step past 32 bits
  }
  EXPECT_NE(fs::path(path).filename().string().find("events.out.tfevents."), std::string::npos);
  const ReadBack r = read_events(path);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["file_version"], "brain.Event:2");
  EXPECT_TRUE(j["purge_steps"].empty());
  const auto& loss = j["scalars"]["train/loss"];
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_EQ(loss[0][0], 1);
  EXPECT_EQ(loss[0][1].get<double>(), 2.5);
  EXPECT_EQ(loss[1][0], 300);
  EXPECT_EQ(loss[1][1].get<double>(), 0.125);
  EXPECT_GT(loss[1][2].get<double>(), 1.7e9);  // wall time in seconds since 1970
  EXPECT_EQ(static_cast<float>(j["scalars"]["train/lr"][0][1].get<double>()), 1e-4f);
  EXPECT_EQ(j["scalars"]["eval/top1"][0][0].get<int64_t>(), 1LL << 40);

  // One flipped payload byte: the reader names the record and fails.
  std::string bytes = read_bytes(path);
  bytes[bytes.size() - 6] ^= 0x01;
  write_bytes(dir.file("damaged"), bytes);
  const ReadBack bad = read_events(dir.file("damaged"));
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("payload CRC mismatch"), std::string::npos) << bad.output;

  // A resumed writer's SessionLog START tells TensorBoard to drop older points from that step on.
  io::EventFileWriter resumed(dir.path().string(), 301);
  EXPECT_NE(resumed.path(), path);
  const ReadBack rr = read_events(resumed.path());
  ASSERT_EQ(rr.code, 0) << rr.output;
  EXPECT_EQ(nlohmann::json::parse(rr.output)["purge_steps"], nlohmann::json::array({301}));
}

// The rows the classification loop logs: training windows of 2 updates (epoch 1: steps 1-4), evaluations.
void log_classification_run(engine::RunRecord& rec, int from_epoch, int to_epoch) {
  for (int e = from_epoch; e <= to_epoch; ++e) {
    for (int s = 2; s <= 4; s += 2) {
      const double step = (e - 1) * 4 + s;
      rec.log({{"epoch", e},
               {"step", step},
               {"train_loss", 3.0 - step / 4},
               {"lr", 0.001 * e},
               {"img_per_s", 100},
               {"data_wait", 0.25}});
    }
    rec.log({{"epoch", e},
             {"step", e * 4.0},
             {"lr", 0.001 * e},
             {"test_top1", 50.0 + e},
             {"test_top5", 90.5},
             {"test_loss", 1.5 / e},
             {"elapsed_s", 3},
             {"best_metric", 50.0 + e}});
  }
}

TEST(RunRecord, SummaryCsvHasTimmsColumnsAndTheEventsCarryTheTags) {
  TempDir dir;
  const std::string metrics = dir.file("run/metrics.jsonl");
  {
    engine::RunRecord rec(metrics, false);
    log_classification_run(rec, 1, 2);
  }
  // Epoch 0: windows (steps 1-2: 2.5, 3-4: 2.0) → 2.25; epoch 1: (1.5, 1.0) → 1.25. timm counts epochs from 0.
  EXPECT_EQ(read_bytes(dir.file("run/summary.csv")),
            "epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n"
            "0,2.25,1.5,51.0,90.5,0.001\n"
            "1,1.25,0.75,52.0,90.5,0.002\n");
  EXPECT_EQ(io::read_metrics(metrics).size(), 6u);
  const auto files = event_files(dir.file("run"));
  ASSERT_EQ(files.size(), 1u);
  const ReadBack r = read_events(files[0]);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto s = nlohmann::json::parse(r.output)["scalars"];
  for (const char* tag :
       {"train/loss", "train/lr", "train/img_per_s", "train/data_wait", "eval/top1", "eval/top5", "eval/loss"})
    EXPECT_TRUE(s.contains(tag)) << tag << " in " << r.output;
  EXPECT_FALSE(s.contains("eval/lr"));
  EXPECT_EQ(s["train/loss"].size(), 4u);
  EXPECT_EQ(s["eval/top1"][1][0], 8);  // the step of epoch 2's evaluation
  EXPECT_EQ(s["eval/top1"][1][1].get<double>(), 52.0);
  EXPECT_EQ(engine::tensorboard_tag("miou", true), "eval/mIoU");
  EXPECT_EQ(engine::tensorboard_tag("ema_top1", true), "eval_ema/top1");
  EXPECT_EQ(engine::tensorboard_tag("step", false), "");

  // Resume after epoch 1 (start_run has cut metrics.jsonl back to it): summary.csv is rebuilt from the kept rows
  // and the new event file purges from step 5 on.
  write_bytes(metrics, read_bytes(metrics).substr(0, [&] {
    const std::string m = read_bytes(metrics);
    size_t at = 0;
    for (int line = 0; line < 3; ++line) at = m.find('\n', at) + 1;
    return at;
  }()));
  {
    engine::RunRecord rec(metrics, true);
    EXPECT_EQ(read_bytes(dir.file("run/summary.csv")),
              "epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n0,2.25,1.5,51.0,90.5,0.001\n");
    log_classification_run(rec, 2, 2);
  }
  EXPECT_EQ(read_bytes(dir.file("run/summary.csv")),
            "epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n"
            "0,2.25,1.5,51.0,90.5,0.001\n"
            "1,1.25,0.75,52.0,90.5,0.002\n");
  EXPECT_EQ(io::read_metrics(metrics).size(), 6u);
  const auto after = event_files(dir.file("run"));
  ASSERT_EQ(after.size(), 2u);
  const std::string newer = after[0] == files[0] ? after[1] : after[0];
  const ReadBack rr = read_events(newer);
  ASSERT_EQ(rr.code, 0) << rr.output;
  EXPECT_EQ(nlohmann::json::parse(rr.output)["purge_steps"], nlohmann::json::array({5}));
}

TEST(RunRecord, SegmentationAndEmaColumns) {
  TempDir dir;
  {
    engine::RunRecord rec(dir.file("seg/metrics.jsonl"), false);
    rec.log({{"epoch", 1}, {"step", 3}, {"train_loss", 2.0}, {"lr", 0.01}});
    rec.log({{"epoch", 1}, {"step", 3}, {"lr", 0.01}, {"miou", 20.5}, {"macc", 30.25}, {"aacc", 60}});
    rec.log({{"epoch", 2}, {"step", 6}, {"lr", 0.005}, {"miou", 22}, {"macc", 31}, {"aacc", 61}});  // no window
  }
  EXPECT_EQ(read_bytes(dir.file("seg/summary.csv")),
            "epoch,train_loss,eval_mIoU,eval_mAcc,eval_aAcc,lr\n0,2.0,20.5,30.25,60.0,0.01\n1,,22.0,31.0,61.0,0.005\n");
  const std::string csv = engine::SummaryCsv::render({{{"epoch", 1}, {"step", 1}, {"train_loss", 1}},
                                                      {{"epoch", 1},
                                                       {"step", 1},
                                                       {"test_top1", 10},
                                                       {"test_top5", 20},
                                                       {"test_loss", 3},
                                                       {"ema_top1", 11},
                                                       {"ema_top5", 21},
                                                       {"ema_loss", 2.5},
                                                       {"lr", 0.1}}});
  EXPECT_EQ(csv,
            "epoch,train_loss,eval_loss,eval_top1,eval_top5,ema_eval_loss,ema_eval_top1,ema_eval_top5,lr\n"
            "0,1.0,3.0,10.0,20.0,2.5,11.0,21.0,0.1\n");
}

TEST(RunDir, ATakenFolderGetsTheNextSuffixUnlessResuming) {
  TempDir dir;
  const std::string out = dir.file("output");
  EXPECT_EQ(engine::pick_run_dir(out, "deit", false), fs::path(out) / "deit");
  EXPECT_TRUE(fs::is_directory(fs::path(out) / "deit"));
  // An empty folder (made by hand, or a run that wrote nothing) is not a run: it is used as it is.
  EXPECT_EQ(engine::pick_run_dir(out, "deit", false), fs::path(out) / "deit");
  write_bytes(dir.file("output/deit/train.log"), "x");
  EXPECT_EQ(engine::pick_run_dir(out, "deit", false).string(), out + "/deit-1");
  write_bytes(dir.file("output/deit-1/train.log"), "x");
  EXPECT_EQ(engine::pick_run_dir(out, "deit", false).string(), out + "/deit-2");
  EXPECT_EQ(engine::pick_run_dir(out, "deit", true), fs::path(out) / "deit");  // resuming: the run's own folder
  EXPECT_EQ(engine::pick_run_dir(out + "/", "", false).string(), out + "-1");  // no experiment: DIR itself
  write_bytes(dir.file("afile"), "x");
  expect_error([&] { engine::pick_run_dir(dir.file("afile"), "run", false); }, "cannot create the run folder");
}

TEST(RunLog, TrainLogIsAppendedToWhenResuming) {
  TempDir dir;
  const std::string path = dir.file("train.log");
  engine::make_logger(path, /*truncate=*/true)->info("first start");
  engine::make_logger(path, /*truncate=*/false)->info("resumed");
  const std::string log = read_bytes(path);
  EXPECT_NE(log.find("first start"), std::string::npos) << log;
  EXPECT_NE(log.find("resumed"), std::string::npos) << log;
  engine::make_logger(path, /*truncate=*/true)->info("fresh");
  EXPECT_EQ(read_bytes(path).find("first start"), std::string::npos);
}

}  // namespace
}  // namespace vt::test
