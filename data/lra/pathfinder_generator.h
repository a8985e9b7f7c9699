// Pathfinder images (Linsley et al. 2018, as LRA's 32x32 set): two marked endpoints, dashed curved contours and
// shorter distractor contours; label 1 when both markers sit on the ends of the same contour.
//
// Drawn on the pixel grid without anti-aliasing: a contour is a walk of 1-pixel steps whose heading turns by a
// bounded random angle at each paddle, inked two pixels on, one off (paddles of 2 with a margin of 1, as LRA's
// set). Different contours (markers included) keep 3 pixels apart (Chebyshev), so the dashes of one contour join
// when gaps of one pixel are bridged while two contours never do. Markers are 3x3 squares at 255, contours one gray
// level in 96..224 per image.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace vt::data::lra {

struct PathfinderOptions {
  int contour_paddles = 14;  ///< LRA's contour_length: 14 for the task's set, 9 and 6 for the easier ones
  double max_turn = 0.6;     ///< radians a heading may turn between paddles
};

struct PathfinderImage {
  std::vector<uint8_t> pixels;  ///< 32x32, row by row
  int32_t label = 0;
  int distractors = 0;  ///< distractor contours drawn (LRA's 20 / (contour_paddles / 3) unless the image was full)
};

/// Image `index` of the pool, a function of (seed, index): the label is drawn first (each with probability 1/2),
/// then the two contours, the markers and the distractors; a layout that does not fit is redrawn.
PathfinderImage generate_pathfinder_example(uint64_t seed, int64_t index, const PathfinderOptions& options = {});

/// The release's folder of a contour length below the data root: pathfinder32/curv_baseline (6),
/// pathfinder32/curv_contour_length_<n> otherwise (9, 14).
std::string pathfinder_folder(int contour_paddles);

/// Writes `count` images under `<out_dir>/<pathfinder_folder(...)>/` as the release does: imgs/<k>/
/// sample_<i>.png with 1000 images per folder k, and metadata/<k>.npy listing "imgs/<k> sample_<i>.png <i> <label>"
/// per line; a folder that already holds files is an error. `progress(done, total)` every thousand images and at the
/// end.
void write_pathfinder_release(const std::string& out_dir, uint64_t seed, int64_t count,
                              const PathfinderOptions& options = {},
                              const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace vt::data::lra
