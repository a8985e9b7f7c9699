// Sliding-window tiling (see sliding_window.h).
#include "engine/sliding_window.h"

#include <algorithm>

#include "core/error.h"

namespace vt::engine {

std::vector<int64_t> window_anchors(int64_t length, int64_t window, int64_t stride) {
  VT_CHECK(length > 0 && window > 0 && stride > 0, "[sliding window] length ", length, ", window ", window,
           " and stride ", stride, " must all be > 0");
  if (length <= window) return {0};
  // Segmenter: [a for a in range(0, L, s) if a < L - window] + [L - window].
  std::vector<int64_t> anchors;
  for (int64_t a = 0; a < length - window; a += stride) anchors.push_back(a);
  anchors.push_back(length - window);
  return anchors;
}

std::vector<WindowBox> sliding_windows(int64_t height, int64_t width, int64_t window, int64_t stride) {
  const std::vector<int64_t> ys = window_anchors(height, window, stride), xs = window_anchors(width, window, stride);
  std::vector<WindowBox> boxes;
  boxes.reserve(ys.size() * xs.size());
  for (int64_t y : ys)
    for (int64_t x : xs) boxes.push_back({y, x, std::min(window, height - y), std::min(window, width - x)});
  return boxes;
}

std::vector<int32_t> window_counts(const std::vector<WindowBox>& windows, int64_t height, int64_t width) {
  std::vector<int32_t> count(static_cast<size_t>(height * width), 0);
  for (const WindowBox& b : windows) {
    VT_CHECK(b.y >= 0 && b.x >= 0 && b.y + b.h <= height && b.x + b.w <= width, "[sliding window] window at (", b.y,
             ", ", b.x, ") of ", b.h, "x", b.w, " leaves the ", height, "x", width, " image");
    for (int64_t y = b.y; y < b.y + b.h; ++y)
      for (int64_t x = b.x; x < b.x + b.w; ++x) ++count[static_cast<size_t>(y * width + x)];
  }
  for (int32_t c : count) VT_CHECK(c > 0, "[sliding window] the windows leave a pixel uncovered");
  return count;
}

}  // namespace vt::engine
