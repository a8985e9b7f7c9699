// What a training run records per metrics row, in the files timm users expect: metrics.jsonl (every row),
// summary.csv (one row per evaluated epoch, timm's columns) and a TensorBoard event file (the scalars under
// train/ and eval/ tags, by global step), all in the run's folder. Both training loops log through it.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "engine/summary_csv.h"
#include "io/metrics.h"
#include "io/tensorboard.h"

namespace vt::engine {

/// The TensorBoard tag of a metrics key in a training-window row (`eval` false) or an evaluation row, e.g.
/// train_loss → "train/loss", test_top1 → "eval/top1", miou → "eval/mIoU"; "" for keys that are not plotted
/// (epoch, step, elapsed_s, best_metric, an evaluation row's lr).
std::string tensorboard_tag(const std::string& key, bool eval);

class RunRecord {
 public:
  /// `metrics_path`: the run folder's metrics.jsonl; summary.csv and the event file go beside it. `resuming`:
  /// metrics.jsonl is appended to (start_run has already cut it back to the checkpoint), summary.csv is rebuilt
  /// from it and the new event file tells TensorBoard to drop the older files' points past it.
  RunRecord(const std::string& metrics_path, bool resuming);

  /// One row to all three files (MetricsLog::log's contract).
  void log(const std::vector<std::pair<std::string, double>>& fields);

 private:
  io::MetricsLog metrics_;
  SummaryCsv summary_;
  io::EventFileWriter events_;
};

}  // namespace vt::engine
