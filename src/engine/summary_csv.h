// summary.csv as timm's train.py writes it (timm.utils.update_summary): one row per evaluated epoch,
//   epoch,train_loss,eval_loss,eval_top1,eval_top5[,ema_eval_loss,ema_eval_top1,ema_eval_top5],lr
// (segmentation: eval_mIoU, eval_mAcc, eval_aAcc in place of loss/top-1/top-5; Long Range Arena: eval_loss and
// eval_top1 of the validation split, then test_top1 where the model became the best), derived from the
// metrics.jsonl rows.
#pragma once
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "io/metrics.h"

namespace vt::engine {

class SummaryCsv {
 public:
  /// (Re)writes `path` from `earlier` (the metrics.jsonl rows a resumed run keeps; empty for a fresh run) and
  /// keeps it open for the rows to come.
  SummaryCsv(const std::string& path, const std::vector<io::MetricRow>& earlier);
  ~SummaryCsv();
  SummaryCsv(const SummaryCsv&) = delete;
  SummaryCsv& operator=(const SummaryCsv&) = delete;

  /// Takes one metrics row: a training window (it has train_loss) adds to its epoch's mean loss; an evaluation
  /// (test_top1, miou or val_top1) writes the epoch's row. Other rows are ignored.
  void add(const io::MetricRow& row);

  /// The CSV text of `rows` (header included; empty when no row is an evaluation): what the file holds after them.
  static std::string render(const std::vector<io::MetricRow>& rows);

 private:
  SummaryCsv() = default;  // render()'s: no file
  // The row's line (the header too when it is the first); empty for a row that is not an evaluation.
  std::string take(const io::MetricRow& row);
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<std::string> columns_;    // fixed by the first evaluation row
  std::map<int64_t, double> loss_sum_;  // per (1-based) epoch: Σ window mean × updates in the window
  std::map<int64_t, double> loss_updates_;
  double last_step_ = 0;
};

}  // namespace vt::engine
