// mIoU / mAcc / aAcc with mmseg's semantics on hand-made label maps; every expected value is worked out by hand
// in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "engine/seg_metrics.h"

namespace vt::test {
namespace {

constexpr uint8_t kIgn = 255;

void add(engine::SegAreas& a, const std::vector<uint8_t>& pred, const std::vector<uint8_t>& label) {
  ASSERT_EQ(pred.size(), label.size());
  a.add(pred.data(), label.data(), static_cast<int64_t>(pred.size()));
}

TEST(SegMetrics, IgnorePixelsAreLeftOutOfEveryArea) {
  // 2x3 image, K = 3.   label 0 0 1    pred 0 1 1
  //                           1 ¬ 2         1 2 0     (¬ = 255, ignored: its prediction 2 is not counted)
  // counted (label, pred): (0,0) (0,1) (1,1) (1,1) (2,0)
  // label area 2 2 1; pred area 2 3 0; intersect 1 2 0; union = P + L − I = 3 3 1
  // IoU 1/3 2/3 0 → 33.33 66.67 0; Acc 1/2 2/2 0/1 → 50 100 0
  // mIoU (33.33 + 66.67 + 0) / 3 = 33.33; mAcc 50; aAcc ΣI/ΣL = 3/5 = 60
  engine::SegAreas a(3);
  add(a, {0, 1, 1, 1, 2, 0}, {0, 0, 1, 1, kIgn, 2});
  EXPECT_EQ(a.label_area(), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(a.pred_area(), (std::vector<int64_t>{2, 3, 0}));
  EXPECT_EQ(a.intersect(), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(a.union_area(), (std::vector<int64_t>{3, 3, 1}));
  const engine::SegScores s = a.scores();
  EXPECT_NEAR(s.iou[0], 100.0 / 3, 1e-9);
  EXPECT_NEAR(s.iou[1], 200.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.iou[2], 0.0);
  EXPECT_DOUBLE_EQ(s.acc[0], 50.0);
  EXPECT_DOUBLE_EQ(s.acc[1], 100.0);
  EXPECT_DOUBLE_EQ(s.acc[2], 0.0);
  EXPECT_NEAR(s.miou, 100.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.macc, 50.0);
  EXPECT_DOUBLE_EQ(s.aacc, 60.0);
}

TEST(SegMetrics, ClassesAbsentEverywhereAreNaNAndExcludedFromTheMeans) {
  // K = 4, label 0 0 1 1, pred 0 0 1 0; classes 2 and 3 appear in neither → U = 0 → NaN.
  // c0: I 2, P 3, L 2, U 3 → IoU 66.67, Acc 100;  c1: I 1, P 1, L 2, U 2 → IoU 50, Acc 50
  // mIoU (66.67 + 50) / 2 = 58.33 (not / 4); mAcc (100 + 50) / 2 = 75; aAcc 3/4 = 75
  engine::SegAreas a(4);
  add(a, {0, 0, 1, 0}, {0, 0, 1, 1});
  const engine::SegScores s = a.scores();
  EXPECT_TRUE(std::isnan(s.iou[2]) && std::isnan(s.iou[3]));
  EXPECT_TRUE(std::isnan(s.acc[2]) && std::isnan(s.acc[3]));
  EXPECT_NEAR(s.miou, (200.0 / 3 + 50.0) / 2, 1e-9);
  EXPECT_DOUBLE_EQ(s.macc, 75.0);
  EXPECT_DOUBLE_EQ(s.aacc, 75.0);
}

TEST(SegMetrics, AClassPredictedButAbsentFromTheLabelsCountsAsIoUZero) {
  // K = 3, label 0 0 0 0, pred 0 0 0 2.
  // c0: I 3, P 3, L 4, U 4 → IoU 75, Acc 75;  c1: nothing → NaN;  c2: I 0, P 1, L 0, U 1 → IoU 0, Acc NaN (L = 0)
  // mIoU (75 + 0) / 2 = 37.5; mAcc 75 (only c0 has labels); aAcc 3/4 = 75
  engine::SegAreas a(3);
  add(a, {0, 0, 0, 2}, {0, 0, 0, 0});
  const engine::SegScores s = a.scores();
  EXPECT_DOUBLE_EQ(s.iou[2], 0.0);
  EXPECT_TRUE(std::isnan(s.acc[2]));
  EXPECT_TRUE(std::isnan(s.iou[1]));
  EXPECT_DOUBLE_EQ(s.miou, 37.5);
  EXPECT_DOUBLE_EQ(s.macc, 75.0);
  EXPECT_DOUBLE_EQ(s.aacc, 75.0);
}

TEST(SegMetrics, AreasAreSummedOverImagesNotScoresAveraged) {
  // image 1: label 0 0 0 0, pred 0 0 0 0 (its own mIoU would be 100); image 2: label 1 1, pred 0 0 (0).
  // totals: c0 I 4, P 6, L 4, U 6 → 66.67;  c1 I 0, P 0, L 2, U 2 → 0.
  // mIoU (66.67 + 0) / 2 = 33.33, not the per-image mean 50; mAcc (100 + 0) / 2 = 50; aAcc 4/6 = 66.67
  engine::SegAreas a(2);
  add(a, {0, 0, 0, 0}, {0, 0, 0, 0});
  add(a, {0, 0}, {1, 1});
  const engine::SegScores s = a.scores();
  EXPECT_NEAR(s.miou, 100.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.macc, 50.0);
  EXPECT_NEAR(s.aacc, 200.0 / 3, 1e-9);
  // merge() of two single-image accumulators gives the same totals
  engine::SegAreas b(2), c(2);
  add(b, {0, 0, 0, 0}, {0, 0, 0, 0});
  add(c, {0, 0}, {1, 1});
  b.merge(c);
  EXPECT_EQ(b.union_area(), a.union_area());
  EXPECT_EQ(b.intersect(), a.intersect());
}

TEST(SegMetrics, AllIgnoredGivesNaNEverywhere) {
  engine::SegAreas a(2);
  add(a, {0, 1, 1}, {kIgn, kIgn, kIgn});
  const engine::SegScores s = a.scores();
  EXPECT_TRUE(std::isnan(s.miou) && std::isnan(s.macc) && std::isnan(s.aacc));
}

TEST(SegMetrics, OutOfRangeLabelsAreAnError) {
  engine::SegAreas a(3);
  std::vector<uint8_t> pred{0, 1}, label{0, 3};  // 3 is neither a class of 0..2 nor the ignore index
  try {
    a.add(pred.data(), label.data(), 2);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label value 3"), std::string::npos) << e.what();
  }
  std::vector<uint8_t> bad_pred{5, 0}, ok_label{0, 0};
  EXPECT_THROW(a.add(bad_pred.data(), ok_label.data(), 2), Error);
}

TEST(SegMetrics, TableSummaryAndJson) {
  engine::SegAreas a(3);
  add(a, {0, 0, 0, 2}, {0, 0, 0, 0});  // IoU 75 nan 0; Acc 75 nan nan
  const engine::SegScores s = a.scores();
  const std::string table = engine::seg_scores_table(s, {"wall", "building", "sky"});
  EXPECT_NE(table.find("| wall     | 75.00 | 75.00 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| building |   nan |   nan |"), std::string::npos) << table;
  EXPECT_NE(table.find("| sky      |  0.00 |   nan |"), std::string::npos) << table;
  EXPECT_NE(table.find("| 75.00 | 37.50 | 75.00 |"), std::string::npos) << table;  // aAcc mIoU mAcc
  EXPECT_EQ(engine::seg_summary_line(s), "mIoU 37.50  mAcc 75.00  aAcc 75.00");
  EXPECT_EQ(engine::seg_scores_json(s, {"wall", "building", "sky"}, {{"images", 1}}),
            "{\"images\":1,\"mIoU\":37.5,\"mAcc\":75.0,\"aAcc\":75.0,\"classes\":["
            "{\"name\":\"wall\",\"IoU\":75.0,\"Acc\":75.0},{\"name\":\"building\",\"IoU\":null,\"Acc\":null},"
            "{\"name\":\"sky\",\"IoU\":0.0,\"Acc\":null}]}");
}

}  // namespace
}  // namespace vt::test
