// The annotated heat map (see the header).
#include "figures/heatmap.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "figures/raster.h"
#include "figures/ticks.h"

namespace vt::figures {
namespace {

constexpr Font kTitle{16, true}, kLabel{13, false}, kCellFont{13, false}, kAxis{13, true};
// Layout in pixels: title band, column axis title + labels above the cells, row axis title + labels at the left,
// the colour bar at the right.
constexpr int kPad = 14, kTitleH = 34, kColTitleH = 22, kColLabelH = 22, kRowTitleW = 24, kRowLabelW = 48, kBarGap = 22,
              kBarW = 16, kBarLabelW = 56, kBarTitleW = 22;

Colour to_colour(Rgb8 c) { return rgb(c.r, c.g, c.b); }

}  // namespace

std::pair<int, int> heatmap_size(int rows, int cols, const HeatmapSpec& spec) {
  const int w = kPad + kRowTitleW + kRowLabelW + cols * spec.cell + kBarGap + kBarW + kBarLabelW + kBarTitleW + kPad;
  const int h = kPad + kTitleH + kColTitleH + kColLabelH + rows * spec.cell + kPad;
  return {w, h};
}

std::unique_ptr<Figure> draw_heatmap(const std::vector<std::vector<double>>& values, const HeatmapSpec& spec) {
  const int rows = static_cast<int>(values.size());
  VT_CHECK(rows > 0 && !values[0].empty(), "[heatmap] no values to draw");
  const int cols = static_cast<int>(values[0].size());
  for (const auto& r : values)
    VT_CHECK(static_cast<int>(r.size()) == cols, "[heatmap] ragged rows: ", r.size(), " values, expected ", cols);
  VT_CHECK(static_cast<int>(spec.row_labels.size()) == rows && static_cast<int>(spec.col_labels.size()) == cols,
           "[heatmap] ", spec.row_labels.size(), " row / ", spec.col_labels.size(), " column labels for a ", rows, "x",
           cols, " matrix");
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& r : values)
    for (double v : r)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  const auto [W, H] = heatmap_size(rows, cols, spec);
  auto fig = std::make_unique<Figure>(W, H);
  Figure& f = *fig;
  const int c = spec.cell;
  const int x0 = kPad + kRowTitleW + kRowLabelW, y0 = kPad + kTitleH + kColTitleH + kColLabelH;
  auto unit = [&](double v) { return hi > lo ? (v - lo) / (hi - lo) : 0.5; };

  if (!spec.title.empty())
    f.text(W / 2.0, kPad, spec.title, f.fit(spec.title, kTitle, W - 2 * kPad), kInk, Align::centre, VAlign::top);
  if (!spec.col_axis.empty())
    f.text(x0 + cols * c / 2.0, kPad + kTitleH + kColTitleH / 2.0, spec.col_axis, kAxis, kInk, Align::centre,
           VAlign::middle);
  if (!spec.row_axis.empty())
    f.text(kPad + kRowTitleW / 2.0, y0 + rows * c / 2.0, spec.row_axis, kAxis, kInk, Align::centre, VAlign::middle, 90);
  for (int j = 0; j < cols; ++j)
    f.text(x0 + (j + 0.5) * c, y0 - kColLabelH / 2.0, spec.col_labels[j], kLabel, kInk, Align::centre, VAlign::middle);
  for (int i = 0; i < rows; ++i) {
    f.text(x0 - 8, y0 + (i + 0.5) * c, spec.row_labels[i], kLabel, kInk, Align::right, VAlign::middle);
    for (int j = 0; j < cols; ++j) {
      const double v = values[i][j];
      const bool finite = std::isfinite(v);
      const Rgb8 cell = finite ? colour_scale(unit(v)) : Rgb8{200, 200, 200};
      f.fill_rect(x0 + j * c, y0 + i * c, c, c, to_colour(cell));
      // Dark text on light cells, white on dark ones (relative luminance).
      const double lum = (0.2126 * cell.r + 0.7152 * cell.g + 0.0722 * cell.b) / 255;
      f.text(x0 + (j + 0.5) * c, y0 + (i + 0.5) * c, finite ? value_label(v, spec.decimals) : "–", kCellFont,
             lum > 0.5 ? kInk : Colour{1, 1, 1}, Align::centre, VAlign::middle);
    }
  }
  for (const auto& [i, j] : spec.outlined)
    if (i >= 0 && i < rows && j >= 0 && j < cols) f.frame_rect(x0 + j * c, y0 + i * c, c, c, palette(3), 3);

  // Colour bar: the scale from lo (bottom) to hi (top), ticked at 1-2-5 steps.
  const double bx = x0 + cols * c + kBarGap, by = y0, bh = rows * c;
  std::vector<Colour> stops;
  for (Rgb8 c : colour_scale_stops()) stops.push_back(to_colour(c));
  f.gradient_rect(bx, by, kBarW, bh, stops, /*upward=*/true);
  f.frame_rect(bx, by, kBarW, bh, kAxisColour);
  if (hi > lo) {
    const auto ticks = linear_ticks(lo, hi, 5);
    const auto labels = tick_labels(ticks);
    for (size_t i = 0; i < ticks.size(); ++i) {
      const double y = by + bh - unit(ticks[i]) * bh;
      f.line(bx + kBarW, y, bx + kBarW + 4, y, kAxisColour);
      f.text(bx + kBarW + 7, y, labels[i], Font{11.5}, kInk, Align::left, VAlign::middle);
    }
  } else if (std::isfinite(lo)) {
    f.text(bx + kBarW + 7, by + bh / 2, value_label(lo, spec.decimals), Font{11.5}, kInk, Align::left, VAlign::middle);
  }
  if (!spec.value_name.empty())
    f.text(bx + kBarW + kBarLabelW + kBarTitleW / 2.0, by + bh / 2, spec.value_name, kLabel, kInk, Align::centre,
           VAlign::middle, 90);
  return fig;
}

void write_heatmap(const std::vector<std::vector<double>>& values, const HeatmapSpec& spec, const std::string& path) {
  const auto fig = draw_heatmap(values, spec);
  save_figure(*fig, path);
}

}  // namespace vt::figures
