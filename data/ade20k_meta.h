// ADE20K (SceneParsing, 150 classes) metadata: the class names and the colour palette in mmseg's ADE20KDataset
// order (class index c = annotation value c + 1 before reduce_zero_label).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vt::data {

/// The 150 class names, index 0 = "wall" … 149 = "flag" (mmseg's 'bed ' without its trailing space).
const std::vector<std::string>& ade20k_class_names();

/// The 150 RGB colours of mmseg's ADE20K palette, same order as the names.
const std::array<std::array<uint8_t, 3>, 150>& ade20k_palette();

/// The colour of class c for pictures: the ADE20K palette for c < 150 (cycled for larger class counts), black
/// for the ignore index 255.
std::array<uint8_t, 3> seg_class_colour(int64_t c);

}  // namespace vt::data
