// Semantic-segmentation scores with mmseg's semantics (IoUMetric / mean_iou): per image, histograms of the
// intersection, union, prediction and label areas over the K classes (pixels whose label is the ignore index
// are left out), summed over the whole split; then per class IoU = I/U and Acc = I/Label, mIoU and mAcc as the
// mean over the classes that are not NaN (U = 0, resp. Label = 0), aAcc = ΣI / ΣLabel; all ×100.
// This is not a mean of per-image scores.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt::engine {

/// The scores of one split (percentages; NaN where a class is undefined).
struct SegScores {
  std::vector<double> iou, acc;  ///< per class; NaN when the class has no union (IoU) or no label pixel (Acc)
  double miou = 0, macc = 0, aacc = 0;
};

/// Per-class pixel areas summed over the images added so far (mmseg's total_area_*).
class SegAreas {
 public:
  explicit SegAreas(int64_t num_classes, int64_t ignore_index = 255);
  /// Adds one image: `pred` and `label` hold n class indices each. Labels equal to the ignore index are left
  /// out; any other label or prediction outside 0..K-1 is an error naming the value.
  void add(const uint8_t* pred, const uint8_t* label, int64_t n);
  /// Adds another split's areas (same class count).
  void merge(const SegAreas& other);
  /// The four per-class areas concatenated: intersect, union, pred, label (4K counts; summed over ranks).
  std::vector<int64_t> totals() const;
  /// The areas whose totals() are `totals` (4K non-negative counts).
  static SegAreas from_totals(const std::vector<int64_t>& totals, int64_t ignore_index = 255);
  int64_t num_classes() const { return static_cast<int64_t>(intersect_.size()); }
  const std::vector<int64_t>& intersect() const { return intersect_; }
  const std::vector<int64_t>& union_area() const { return union_; }
  const std::vector<int64_t>& pred_area() const { return pred_; }
  const std::vector<int64_t>& label_area() const { return label_; }
  /// IoU, Acc, mIoU, mAcc and aAcc of the areas (aAcc is NaN when no pixel was labelled).
  SegScores scores() const;

 private:
  std::vector<int64_t> intersect_, union_, pred_, label_;
  int64_t ignore_;
};

/// mmseg's per-class table (class name, IoU, Acc with 2 decimals; "nan" for undefined classes) followed by the
/// summary row aAcc / mIoU / mAcc. `class_names` may be empty (classes are then numbered).
std::string seg_scores_table(const SegScores& s, const std::vector<std::string>& class_names);

/// "mIoU 45.81  mAcc 56.20  aAcc 81.94" (2 decimals).
std::string seg_summary_line(const SegScores& s);

/// The scores as one JSON object: {"mIoU":..,"mAcc":..,"aAcc":..,"classes":[{"name":..,"IoU":..,"Acc":..},..]}
/// preceded by the extra numeric `fields` (e.g. images, img_per_s); NaN is written as null.
std::string seg_scores_json(const SegScores& s, const std::vector<std::string>& class_names,
                            const std::vector<std::pair<std::string, double>>& fields = {});

}  // namespace vt::engine
