// Evaluation results in the shape of timm's validate.py: the " * Acc@1 ... Acc@5 ..." line and the results row
// (model, top1, top1_err, top5, top5_err, param_count, img_size, crop_pct, interpolation) as JSON or CSV.
#pragma once
#include <cstdint>
#include <string>

namespace vt::engine {

/// One evaluation, with what validate.py reports plus our loss, image count and throughput.
struct EvalResultsRow {
  std::string model;
  double top1 = 0, top5 = 0;  ///< percent
  double loss = 0;
  int64_t param_count = 0;  ///< parameters (printed in millions, 2 decimals, as timm)
  int64_t img_size = 0;
  double crop_pct = 0.875;
  std::string interpolation = "bicubic";
  int64_t images = 0;
  double img_per_s = 0;
  bool amp = false;       ///< bf16 autocast (validate.py --amp); false: f32
  int64_t bad_files = 0;  ///< unreadable images left out (not in `images`, not in the metrics)
};

/// validate.py's summary: " * Acc@1 72.172 (27.828) Acc@5 91.114 (8.886)".
std::string eval_summary_line(const EvalResultsRow& row);

/// The row as a JSON object with timm's keys first, in timm's order and rounding (4 decimals; param_count in
/// millions to 2), then ours: loss, images, bad_files, img_per_s, amp (true / false). `indent` > 0 pretty-prints
/// like json.dumps(indent=4); 0 writes one compact line.
std::string eval_results_json(const EvalResultsRow& row, int indent = 4);

/// The row as validate.py's CSV: a header line and one value line (same keys as the JSON).
std::string eval_results_csv(const EvalResultsRow& row);

/// Writes the row to `path` atomically: JSON when the name ends in ".json", else CSV (timm's default format).
void write_eval_results(const std::string& path, const EvalResultsRow& row);

}  // namespace vt::engine
