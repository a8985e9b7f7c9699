// The paper's Figure 4: per MiTA layer, how many experts selected each patch token, as a grid of G×G maps (four
// to a row, so twelve layers stay readable at page width), one colour scale shared by all maps, the CLS
// token's count under each map.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vt::figures {

struct SelectionMapLayout {
  int width = 0, height = 0;
  int columns = 0;  // maps per row
  int cell = 0;     // a token's square, pixels
  /// Top-left pixel of token t's square (t ≥ 1: patch (t-1)/G, (t-1)%G) in the map of `layer` (0-based).
  std::pair<int, int> cell_origin(int64_t layer, int64_t token, int64_t grid) const;
};

/// The layout draw_selection_map uses for `layers` maps of side `grid`.
SelectionMapLayout selection_map_layout(int64_t layers, int64_t grid);

/// counts[layer][token] (token 0 = CLS, then G² patches; one head's whole counts or their mean over heads): writes
/// the figure at `path` (.png) and as .svg beside it. `heads` names what was counted in the title ("head 0", "mean
/// over 6 heads"); `experts`: m, for the colour bar's title. Throws naming the sizes when a layer has not G² + 1
/// counts.
void draw_selection_map(const std::vector<std::vector<double>>& counts, int64_t grid, const std::string& heads,
                        int64_t experts, const std::string& path);

/// The title words for one head ("head 2") or the mean over `heads` heads (head < 0: "mean over 6 heads").
std::string selection_heads_label(int64_t head, int64_t heads);

}  // namespace vt::figures
