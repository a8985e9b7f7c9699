// Pathfinder as the LRA release lays it out: <difficulty>/metadata/*.npy (text, despite the name: one line per
// image, "imgs/<k> sample_<i>.png <i> <label> ...", space-separated) and the 32x32 gray PNGs under imgs/.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/lra/sequence_set.h"

namespace vt::data::lra {

/// The difficulty LRA's Pathfinder task uses (contours of 14 paddles), below the data root.
constexpr const char* kPathfinderFolder = "pathfinder32/curv_contour_length_14";

struct PathfinderEntry {
  std::string image;  ///< full path
  int32_t label = 0;
};

/// Every metadata line of `difficulty_dir`, the files in numeric order of their names (0.npy, 1.npy, ..., 10.npy),
/// lines in file order. A missing folder, a line with fewer than four columns or a label other than 0/1 throws
/// naming the file and line.
std::vector<PathfinderEntry> read_pathfinder_metadata(const std::string& difficulty_dir);

/// How many of a pool of `pool` images LRA's split puts in `split`: floor(0.8 n), floor(0.9 n) - floor(0.8 n), the
/// rest.
int64_t pathfinder_split_size(int64_t pool, const std::string& split);

/// LRA's split of the one pool into train 80%, val 10%, test 10%: the entries shuffled by a fixed permutation (a
/// function of their count only), then cut at floor(0.8 n) and floor(0.9 n).
std::vector<PathfinderEntry> pathfinder_split(std::vector<PathfinderEntry> all, const std::string& split);

/// The split's images as 1024 pixel tokens (pixel + 1) cut to `max_length`, at most `limit` (0: all). Empty image
/// files are left out, as LRA filters them; any other unreadable image, or one that is not 32x32 gray, throws
/// naming it.
std::vector<SequenceExample> read_pathfinder_split(const std::string& difficulty_dir, const std::string& split,
                                                   int64_t max_length, int64_t limit = 0);

}  // namespace vt::data::lra
