// Figure 4's grid of token-selection maps (see the header).
#include "figures/selection_map.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "figures/figure.h"
#include "figures/raster.h"
#include "figures/ticks.h"

namespace vt::figures {
namespace {

constexpr int kPad = 12, kGap = 14, kTitle = 34, kLabel = 20, kCls = 20, kBarH = 14, kBarTicks = 22, kBarTitle = 22;

Colour to_colour(Rgb8 c) { return rgb(c.r, c.g, c.b); }

}  // namespace

std::pair<int, int> SelectionMapLayout::cell_origin(int64_t layer, int64_t token, int64_t grid) const {
  const int side = static_cast<int>(grid) * cell;
  const int col = static_cast<int>(layer % columns), row = static_cast<int>(layer / columns);
  const int x0 = kPad + col * (side + kGap), y0 = kTitle + row * (kLabel + side + kCls + kGap) + kLabel;
  return {x0 + static_cast<int>((token - 1) % grid) * cell, y0 + static_cast<int>((token - 1) / grid) * cell};
}

SelectionMapLayout selection_map_layout(int64_t layers, int64_t grid) {
  SelectionMapLayout l;
  l.columns = static_cast<int>(std::min<int64_t>(std::max<int64_t>(layers, 1), 4));
  const int rows = static_cast<int>((layers + l.columns - 1) / l.columns);
  l.cell = std::max(4, static_cast<int>(176 / grid));
  const int side = static_cast<int>(grid) * l.cell;
  l.width = std::max(2 * kPad + l.columns * side + (l.columns - 1) * kGap, 420);
  l.height = kTitle + rows * (kLabel + side + kCls) + (rows - 1) * kGap + 8 + kBarH + kBarTicks + kBarTitle + kPad;
  return l;
}

std::string selection_heads_label(int64_t head, int64_t heads) {
  return head >= 0 ? "head " + std::to_string(head) : "mean over " + std::to_string(heads) + " heads";
}

void draw_selection_map(const std::vector<std::vector<double>>& counts, int64_t grid, const std::string& heads,
                        int64_t experts, const std::string& path) {
  VT_CHECK(!counts.empty(), "[viz] no layers to draw");
  double hi = 0;
  bool whole = true;  // one head's counts: integer ticks and CLS label; a mean over heads: one decimal
  for (const auto& layer : counts) {
    VT_CHECK(static_cast<int64_t>(layer.size()) == grid * grid + 1, "[viz] ", layer.size(), " counts for a ", grid, "x",
             grid, " grid + CLS");
    for (size_t t = 1; t < layer.size(); ++t) hi = std::max(hi, layer[t]);
    for (double c : layer) whole = whole && c == std::floor(c);
  }
  auto count_text = [whole](double c) {
    char buf[32];
    std::snprintf(buf, sizeof buf, whole ? "%.0f" : "%.1f", c);
    return std::string(buf);
  };
  const SelectionMapLayout lay = selection_map_layout(static_cast<int64_t>(counts.size()), grid);
  Figure f(lay.width, lay.height);
  f.text(lay.width / 2.0, 8, "Token selection per layer (" + heads + ")", Font{15, true}, kInk, Align::centre,
         VAlign::top);
  const int side = static_cast<int>(grid) * lay.cell;
  for (size_t l = 0; l < counts.size(); ++l) {
    const auto [x0, y0] = lay.cell_origin(static_cast<int64_t>(l), 1, grid);
    f.text(x0 + side / 2.0, y0 - 3, "layer " + std::to_string(l + 1), Font{12.5, true}, kInk, Align::centre,
           VAlign::bottom);
    RgbImage map(static_cast<int>(grid), static_cast<int>(grid));  // one pixel per token, scaled up square
    for (int64_t t = 1; t <= grid * grid; ++t) {
      const double v = hi > 0 ? counts[l][static_cast<size_t>(t)] / hi : 0;
      map.set(static_cast<int>((t - 1) % grid), static_cast<int>((t - 1) / grid), colour_scale(v));
    }
    f.image(map, x0, y0, lay.cell);
    f.frame_rect(x0 - 1, y0 - 1, side + 2, side + 2, kAxisColour);
    f.text(x0 + side / 2.0, y0 + side + 3, "CLS: " + count_text(counts[l][0]), Font{12}, kInk, Align::centre,
           VAlign::top);
  }
  // The shared colour bar along the bottom: 0 … the largest count.
  const double bx = kPad, bw = lay.width - 2 * kPad;
  const double by = lay.height - kPad - kBarTitle - kBarTicks - kBarH;
  std::vector<Colour> stops;
  for (Rgb8 c : colour_scale_stops()) stops.push_back(to_colour(c));
  f.gradient_rect(bx, by, bw, kBarH, stops, /*upward=*/false);
  f.frame_rect(bx, by, bw, kBarH, kAxisColour);
  if (hi > 0) {
    std::vector<double> ticks;
    for (double t : linear_ticks(0, hi, 6))
      if (!whole || t == std::floor(t)) ticks.push_back(t);  // one head's counts are whole numbers
    const std::vector<std::string> labels = whole ? std::vector<std::string>() : tick_labels(ticks);
    for (size_t i = 0; i < ticks.size(); ++i) {
      const double x = bx + ticks[i] / hi * bw;
      f.line(x, by + kBarH, x, by + kBarH + 4, kAxisColour);
      f.text(x, by + kBarH + 5, whole ? tick_labels({ticks[i]})[0] : labels[i], Font{11.5}, kInk, Align::centre,
             VAlign::top);
    }
  }
  f.text(lay.width / 2.0, lay.height - kPad, "experts (of m = " + std::to_string(experts) + ") that selected the token",
         Font{12.5}, kInk, Align::centre, VAlign::bottom);
  save_figure(f, path);
}

}  // namespace vt::figures
