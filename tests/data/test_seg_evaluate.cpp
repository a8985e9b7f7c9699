// Sliding-window segmentation inference and whole-split evaluation with a tiny Segmenter on the CPU: windows
// averaged where they overlap (checked against forward passes on the crops), padding of small images, the
// single-pass prediction = arg-max of the averaged logits, and evaluate_segmentation on a generated mini-ADE20K
// (scores equal to the areas of its own predictions; unreadable or mismatched files named in the error).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "autograd/node.h"
#include "data/datasets.h"
#include "data/image_decode.h"
#include "data/transforms.h"
#include "engine/seg_evaluate.h"
#include "image_writers.h"
#include "mini_ade20k.h"
#include "test_util.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

// vit_micro (dim 96, 4 heads) with 1 block, 3 channels, crop 28, patch 7, 5 classes, linear decoder.
models::Segmenter tiny_segmenter() {
  io::ModelConfig m;
  m.name = "vit_micro";
  m.img_size = 28;
  m.patch_size = 7;
  m.in_chans = 3;
  m.depth = 1;
  m.num_classes = 5;
  m.decoder.type = "linear";
  models::Segmenter seg(models::segmenter_config(m, 7));
  seg.eval();
  return seg;
}

Tensor wavy(int64_t h, int64_t w) {
  std::vector<double> v(static_cast<size_t>(3 * h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37 * static_cast<double>(i)) * 1.5;
  return Tensor::from_vector(v, {1, 3, h, w});
}

engine::SegEvalOptions tiny_options() {
  engine::SegEvalOptions o;
  o.crop = 28;
  o.stride = 20;
  o.batch = 2;
  return o;
}

TEST(SegEvaluate, OneWindowIsTheForwardPass) {
  const auto seg = tiny_segmenter();
  NoGradGuard g;
  const Tensor x = wavy(28, 28);
  const auto got = engine::sliding_window_logits(seg, x, tiny_options()).to_vector();
  const auto want = seg.forward(x).to_vector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6) << i;  // one window, count 1
}

TEST(SegEvaluate, OverlappingWindowsAreAveraged) {
  // 28 x 40, window 28, stride 20: columns anchored at 0 and 12 (= 40 − 28); columns 12..27 are covered twice.
  const auto seg = tiny_segmenter();
  NoGradGuard g;
  const Tensor x = wavy(28, 40);
  const Tensor got = engine::sliding_window_logits(seg, x, tiny_options());
  ASSERT_EQ(got.shape(), (Shape{1, 5, 28, 40}));
  const Tensor left = seg.forward(x.slice(3, 0, 28).contiguous()), right = seg.forward(x.slice(3, 12, 40).contiguous());
  const auto g_v = got.to_vector(), l = left.to_vector(), r = right.to_vector();
  for (int64_t k = 0; k < 5; ++k)
    for (int64_t y = 0; y < 28; ++y)
      for (int64_t c = 0; c < 40; ++c) {
        const double lv = c < 28 ? l[static_cast<size_t>((k * 28 + y) * 28 + c)] : 0;
        const double rv = c >= 12 ? r[static_cast<size_t>((k * 28 + y) * 28 + c - 12)] : 0;
        const double want = c < 12 ? lv : c < 28 ? (lv + rv) / 2 : rv;
        ASSERT_NEAR(g_v[static_cast<size_t>((k * 28 + y) * 40 + c)], want, 1e-5) << k << "," << y << "," << c;
      }
}

TEST(SegEvaluate, ASmallImageIsZeroPaddedToTheWindow) {
  const auto seg = tiny_segmenter();
  NoGradGuard g;
  const Tensor x = wavy(20, 28);
  Tensor padded = Tensor::zeros({1, 3, 28, 28});
  padded.slice(2, 0, 20).copy_(x);
  const auto got = engine::sliding_window_logits(seg, x, tiny_options()).to_vector();
  const auto want = seg.forward(padded).slice(2, 0, 20).contiguous().to_vector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(SegEvaluate, PredictionIsTheArgMaxOfTheAveragedLogits) {
  const auto seg = tiny_segmenter();
  cv::Mat rgb = pattern_rgb(50, 30, 3);
  engine::SegEvalOptions o = tiny_options();
  o.short_side = 30;  // the eval resize keeps 50 x 30 as it is
  const cv::Mat pred = engine::predict_segmentation(seg, rgb, o, cpu());
  ASSERT_EQ(pred.rows, 30);
  ASSERT_EQ(pred.cols, 50);
  NoGradGuard g;
  data::Normalization norm;
  norm.mean = o.mean;
  norm.std = o.std;
  Tensor x = Tensor::empty({1, 3, 30, 50});
  data::to_normalized_chw(rgb, norm, x.data<float>());
  const auto logits = engine::sliding_window_logits(seg, x, o).to_vector();
  int mismatches = 0;
  for (int y = 0; y < 30; ++y)
    for (int c = 0; c < 50; ++c) {
      int best = 0;
      for (int k = 1; k < 5; ++k)
        if (logits[static_cast<size_t>((k * 30 + y) * 50 + c)] > logits[static_cast<size_t>((best * 30 + y) * 50 + c)])
          best = k;
      mismatches += pred.at<uint8_t>(y, c) != best;
    }
  EXPECT_EQ(mismatches, 0);
  // multi-scale + flip still gives a full-size map of valid classes (short side 15 < 28 is upsampled first)
  o.scales = {0.5, 1.0};
  o.flip = true;
  const cv::Mat ms = engine::predict_segmentation(seg, rgb, o, cpu());
  ASSERT_EQ(ms.size(), pred.size());
  for (int y = 0; y < 30; ++y)
    for (int c = 0; c < 50; ++c) ASSERT_LT(ms.at<uint8_t>(y, c), 5);
}

TEST(SegEvaluate, WholeSplitScoresAreTheAreasOfThePredictions) {
  TempDir dir;
  MiniAde20kOptions mini;
  mini.train = 1;
  mini.val = 3;
  write_mini_ade20k(dir.path().string(), mini);
  const auto pairs = data::ade20k(dir.path().string(), "validation");
  ASSERT_EQ(pairs.size(), 3u);
  const auto seg = tiny_segmenter();
  engine::SegEvalOptions o = tiny_options();
  o.short_side = 32;
  const engine::SegEvalResult r = engine::evaluate_segmentation(seg, pairs, o, cpu());
  EXPECT_EQ(r.images, 3);
  engine::SegAreas areas(5);
  for (const auto& p : pairs) {
    cv::Mat label = data::load_label_png(p.label);
    data::reduce_zero_label(label);  // the 1-pixel frame of raw 0 becomes ignore
    const cv::Mat pred = engine::predict_segmentation(seg, data::load_rgb(p.image), o, cpu());
    areas.add(pred.ptr<uint8_t>(), label.ptr<uint8_t>(), static_cast<int64_t>(label.total()));
  }
  const engine::SegScores want = areas.scores();
  for (size_t c = 0; c < 5; ++c) {
    EXPECT_EQ(std::isnan(r.scores.iou[c]), std::isnan(want.iou[c])) << c;
    if (!std::isnan(want.iou[c])) {
      EXPECT_DOUBLE_EQ(r.scores.iou[c], want.iou[c]) << c;
    }
  }
  EXPECT_DOUBLE_EQ(r.scores.aacc, want.aacc);
  o.limit = 1;
  EXPECT_EQ(engine::evaluate_segmentation(seg, pairs, o, cpu()).images, 1);
}

TEST(SegEvaluate, BadFilesAreNamed) {
  TempDir dir;
  MiniAde20kOptions mini;
  mini.train = 1;
  mini.val = 1;
  write_mini_ade20k(dir.path().string(), mini);
  auto pairs = data::ade20k(dir.path().string(), "validation");
  const auto seg = tiny_segmenter();
  const engine::SegEvalOptions o = tiny_options();
  auto missing = pairs;
  missing[0].image = (dir.path() / "nope.jpg").string();
  expect_error([&] { engine::evaluate_segmentation(seg, missing, o, cpu()); }, "nope.jpg");
  const std::string small = (dir.path() / "small.png").string();
  write_png(small, cv::Mat(5, 5, CV_8UC1, cv::Scalar(1)));
  auto mismatched = pairs;
  mismatched[0].label = small;
  expect_error([&] { engine::evaluate_segmentation(seg, mismatched, o, cpu()); }, "small.png");
  auto garbage = pairs;
  const std::string text = (dir.path() / "garbage.png").string();
  {
    std::FILE* f = std::fopen(text.c_str(), "w");
    std::fputs("not a png", f);
    std::fclose(f);
  }
  garbage[0].label = text;
  expect_error([&] { engine::evaluate_segmentation(seg, garbage, o, cpu()); }, "garbage.png");
}

TEST(SegEvaluate, ImagesAboveTheConfiguredPixelLimitAreErrorsNamingTheFile) {
  TempDir dir;
  MiniAde20kOptions mini;
  mini.train = 1;
  mini.val = 1;
  write_mini_ade20k(dir.path().string(), mini);
  const auto pairs = data::ade20k(dir.path().string(), "validation");
  const auto seg = tiny_segmenter();
  io::Config cfg;
  cfg.data.max_image_pixels = 1000;  // the validation image is 52x43 = 2236 pixels
  engine::SegEvalOptions o = tiny_options();
  o.max_image_pixels = engine::seg_eval_options(cfg).max_image_pixels;
  ASSERT_EQ(o.max_image_pixels, 1000);
  const std::string err = error_of([&] { engine::evaluate_segmentation(seg, pairs, o, cpu()); });
  EXPECT_CONTAINS(err, pairs[0].image);
  EXPECT_CONTAINS(err, "more than data.max_image_pixels = 1000");
  o.max_image_pixels = 2236;  // the limit itself is allowed
  EXPECT_EQ(engine::evaluate_segmentation(seg, pairs, o, cpu()).images, 1);
}

}  // namespace
}  // namespace vt::test
