// Line charts: one or more named series on linear or log axes, with a title, axis titles (with units), tick
// labels, a grid and a legend placed where the data leaves room.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "figures/figure.h"

namespace vt::figures {

struct Series {
  std::string name;                               // the legend's text ("" : not in the legend)
  std::vector<std::pair<double, double>> points;  // (x, y) in drawing order; a non-finite y leaves a gap
  bool markers = false;                           // a dot at every point (sparse series: evaluations)
  bool dashed = false;
};

struct ChartSpec {
  std::string title, x_title, y_title;
  bool log_x = false, log_y = false;
  int width = 820, height = 480;
};

/// Draws the chart into a new figure. Points that a log axis cannot show (≤ 0) and non-finite points leave gaps.
/// Throws vt::Error (naming `what`, e.g. the output path) when no series has a point to draw.
std::unique_ptr<Figure> draw_chart(const std::vector<Series>& series, const ChartSpec& spec, const std::string& what);

/// One row of a dot chart: a label, a value and the half-width of its error bar (0: none).
struct DotRow {
  std::string label;
  double value = 0, error = 0;
};

/// A dot chart (e.g. mean ± std over seeds): one row per entry with its label at the left, a dot at the value,
/// a whisker of ±error and the value written beside it; a dashed red line at `reference` unless it is NaN;
/// `x_title` under the axis. Throws when `rows` is empty or holds no finite value.
std::unique_ptr<Figure> draw_dots(const std::vector<DotRow>& rows, const std::string& title, const std::string& x_title,
                                  double reference, const std::string& what);

}  // namespace vt::figures
