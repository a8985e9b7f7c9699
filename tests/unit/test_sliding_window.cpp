// The sliding-window tiler: anchors at 0, s, 2s, … plus one flush with the border; every pixel covered, with
// the counts worked out by hand for sizes that the stride does not divide.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/sliding_window.h"

namespace vt::test {
namespace {

using engine::window_anchors;

// Per-axis coverage: how many of `anchors` (each covering [a, a + window) ∩ [0, length)) contain i.
std::vector<int32_t> axis_counts(const std::vector<int64_t>& anchors, int64_t length, int64_t window) {
  std::vector<int32_t> c(static_cast<size_t>(length), 0);
  for (int64_t a : anchors)
    for (int64_t i = a; i < std::min(a + window, length); ++i) ++c[static_cast<size_t>(i)];
  return c;
}

TEST(SlidingWindow, AnchorsForSizesTheStrideDoesNotDivide) {
  EXPECT_EQ(window_anchors(512, 512, 480), (std::vector<int64_t>{0}));
  // 683 − 512 = 171: 0 < 171, then 480 ≥ 171 stops; last window flush: 171
  EXPECT_EQ(window_anchors(683, 512, 480), (std::vector<int64_t>{0, 171}));
  // 1000 − 512 = 488: 0 and 480 < 488, then 488
  EXPECT_EQ(window_anchors(1000, 512, 480), (std::vector<int64_t>{0, 480, 488}));
  // 992 − 512 = 480: exactly one stride, no duplicate anchor
  EXPECT_EQ(window_anchors(992, 512, 480), (std::vector<int64_t>{0, 480}));
  EXPECT_EQ(window_anchors(700, 512, 480), (std::vector<int64_t>{0, 188}));
  EXPECT_EQ(window_anchors(2048, 640, 608), (std::vector<int64_t>{0, 608, 1216, 1408}));
  // mmseg's grid count ceil((L − window) / s) + 1, for every length up to 3000
  for (int64_t L = 513; L <= 3000; ++L) {
    const auto a = window_anchors(L, 512, 480);
    ASSERT_EQ(static_cast<int64_t>(a.size()), (L - 512 + 479) / 480 + 1) << L;
    ASSERT_EQ(a.back(), L - 512) << L;
  }
}

TEST(SlidingWindow, CountsFor512x683) {
  // rows: one window [0, 512); columns: windows at 0 and 171 → x < 171: 1, 171..511: 2, 512..682: 1
  const auto boxes = engine::sliding_windows(512, 683, 512, 480);
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[1].x, 171);
  EXPECT_EQ(boxes[1].w, 512);
  const auto count = engine::window_counts(boxes, 512, 683);
  for (int64_t y : {0, 300, 511}) {
    for (int64_t x = 0; x < 683; ++x) {
      const int32_t expected = x < 171 ? 1 : x < 512 ? 2 : 1;
      ASSERT_EQ(count[static_cast<size_t>(y * 683 + x)], expected) << y << "," << x;
    }
  }
}

TEST(SlidingWindow, CountsFor700x1000Stride480) {
  // rows: anchors 0, 188 → y < 188: 1, 188..511: 2, 512..699: 1
  // columns: anchors 0, 480, 488 → x < 480: 1, 480..487: 2, 488..511: 3, 512..991: 2, 992..999: 1
  // count(y, x) = rows(y) · columns(x)
  const auto boxes = engine::sliding_windows(700, 1000, 512, 480);
  ASSERT_EQ(boxes.size(), 6u);
  const auto count = engine::window_counts(boxes, 700, 1000);
  auto rows = [](int64_t y) { return y < 188 ? 1 : y < 512 ? 2 : 1; };
  auto cols = [](int64_t x) { return x < 480 ? 1 : x < 488 ? 2 : x < 512 ? 3 : x < 992 ? 2 : 1; };
  int64_t total = 0;
  for (int64_t y = 0; y < 700; ++y)
    for (int64_t x = 0; x < 1000; ++x) {
      ASSERT_EQ(count[static_cast<size_t>(y * 1000 + x)], rows(y) * cols(x)) << y << "," << x;
      total += count[static_cast<size_t>(y * 1000 + x)];
    }
  EXPECT_EQ(total, 6 * 512 * 512);  // every window lies wholly inside the image
}

TEST(SlidingWindow, EveryPixelCoveredForManySizes) {
  for (int64_t h : {1, 31, 512, 513, 700, 991, 992, 993, 1537})
    for (int64_t w : {1, 100, 512, 683, 1000, 2048}) {
      const auto boxes = engine::sliding_windows(h, w, 512, 480);
      const auto count = engine::window_counts(boxes, h, w);  // throws if a pixel is left uncovered
      const auto ry = axis_counts(window_anchors(h, 512, 480), h, 512);
      const auto rx = axis_counts(window_anchors(w, 512, 480), w, 512);
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          ASSERT_EQ(count[static_cast<size_t>(y * w + x)], ry[static_cast<size_t>(y)] * rx[static_cast<size_t>(x)]);
    }
}

TEST(SlidingWindow, ImagesSmallerThanTheWindowGetOneClippedWindow) {
  // 300x400 < 512: one window at (0, 0), 300x400 of it inside the image (the crop is padded to 512 by the caller)
  auto boxes = engine::sliding_windows(300, 400, 512, 480);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].y, 0);
  EXPECT_EQ(boxes[0].x, 0);
  EXPECT_EQ(boxes[0].h, 300);
  EXPECT_EQ(boxes[0].w, 400);
  for (int32_t c : engine::window_counts(boxes, 300, 400)) ASSERT_EQ(c, 1);
  // short in one axis only: 300x1000 → rows one clipped window, columns 0, 480, 488
  boxes = engine::sliding_windows(300, 1000, 512, 480);
  ASSERT_EQ(boxes.size(), 3u);
  for (const auto& b : boxes) EXPECT_EQ(b.h, 300);
  EXPECT_EQ(boxes[2].x, 488);
  EXPECT_EQ(boxes[2].w, 512);
}

TEST(SlidingWindow, BadArgumentsAreErrors) {
  EXPECT_ANY_THROW(window_anchors(100, 0, 10));
  EXPECT_ANY_THROW(window_anchors(100, 10, 0));
  EXPECT_ANY_THROW(engine::window_counts({{0, 0, 10, 10}}, 5, 5));
}

}  // namespace
}  // namespace vt::test
