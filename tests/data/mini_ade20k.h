// A generated mini-ADE20K (ADEChallengeData2016 layout) for tests: images/{training,validation}/ADE_*.jpg and
// annotations/{training,validation}/ADE_*.png with raw labels (0 = "other", reduced to ignore; 1..150 classes).
#pragma once
#include <string>
#include <vector>

#include "io/config.h"

namespace vt::test {

struct MiniAde20kOptions {
  int train = 8, val = 3;       ///< images per split
  int classes = 4;              ///< raw labels 1..classes appear (plus 0 at the borders)
  int width = 48, height = 40;  ///< the first image's size; the others vary by a few pixels
};

/// Writes the tree under `root`/ADEChallengeData2016 and returns that folder. Each image is split into vertical
/// bands of flat, well-separated colours; the label map holds the band's class (one colour per class), with a
/// one-pixel frame of raw 0, so a model can learn it in a few steps.
std::string write_mini_ade20k(const std::string& root, const MiniAde20kOptions& options = {});

/// configs/ade20k/`config` shrunk to the mini dataset at `data_dir` (32² crops, patch 8 → 4×4 patches, 2 blocks of
/// width 48, CBT with 2 heads × 8 dims and 2×2 representatives, 3 epochs of batch 4 on the CPU, output `out`), then
/// the `extra` key=value settings.
io::Config mini_segmenter_config(const std::string& config, const std::string& data_dir, const std::string& out,
                                 const std::vector<std::string>& extra = {});

}  // namespace vt::test
