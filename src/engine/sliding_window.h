// The sliding-window tiler of segmentation inference (Segmenter's sliding_window / mmseg's slide_inference):
// windows of side `window` anchored at 0, s, 2s, … along each axis while the window still ends inside the image,
// plus a last one flush with the far border, i.e. ceil((L − window)/s) + 1 anchors per axis of length L > window.
// An axis shorter than the window gets one window at 0, clipped to the image (the caller pads the crop).
#pragma once
#include <cstdint>
#include <vector>

namespace vt::engine {

/// One window: its top-left corner and its extent inside the image (h, w ≤ window; < only when the image is
/// smaller than the window along that axis).
struct WindowBox {
  int64_t y = 0, x = 0, h = 0, w = 0;
};

/// Anchors along one axis of `length` pixels (see the file comment). window > 0, stride > 0.
std::vector<int64_t> window_anchors(int64_t length, int64_t window, int64_t stride);

/// All windows of a height × width image, row-major (top to bottom, then left to right).
std::vector<WindowBox> sliding_windows(int64_t height, int64_t width, int64_t window, int64_t stride);

/// How many windows cover each pixel (height × width, row-major); the divisor that turns summed window logits
/// into their average. Every entry is ≥ 1.
std::vector<int32_t> window_counts(const std::vector<WindowBox>& windows, int64_t height, int64_t width);

}  // namespace vt::engine
