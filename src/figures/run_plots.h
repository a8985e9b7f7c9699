// `vitrain plot RUN_DIR`: a run's metrics.jsonl rows drawn as charts against the epoch: loss (training per
// logged window, test and EMA per evaluation), learning rate, accuracy (test / EMA top-1 and top-5) and, for
// segmentation runs, mIoU / mAcc / aAcc. Each chart is written as PNG and SVG.
#pragma once
#include <string>
#include <vector>

#include "io/metrics.h"

namespace vt::figures {

/// The epoch (fractional inside an epoch) of every training-window row, from its global step and the updates
/// per epoch that the evaluation rows (step / epoch) or the first epoch's rows show; NaN where neither is known.
double epoch_of(const io::MetricRow& row, double updates_per_epoch);

/// The updates per epoch of a run, from its rows (0 when they do not tell).
double updates_per_epoch(const std::vector<io::MetricRow>& rows);

/// Writes loss, lr, accuracy (classification) and miou (segmentation) as .png and .svg into `out_dir`; charts
/// without data are skipped. Returns the paths written (PNG first, then its SVG, per chart).
std::vector<std::string> plot_metrics(const std::vector<io::MetricRow>& rows, const std::string& out_dir);

}  // namespace vt::figures
