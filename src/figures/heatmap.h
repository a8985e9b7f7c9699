// An annotated heat map like the paper's Figures 9 and 10: a matrix of cells coloured by value (viridis), each
// value written in its cell, row and column labels with their axis titles, a title and a colour bar with ticks.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "figures/figure.h"

namespace vt::figures {

struct HeatmapSpec {
  std::string title;
  std::string row_axis, col_axis;                   // e.g. "m (experts)", "k (keys per expert)"
  std::vector<std::string> row_labels, col_labels;  // one per row / column
  std::string value_name;                           // the colour bar's title, e.g. "top-1 (%)"
  int cell = 64;                                    // cell side in pixels
  int decimals = 1;                                 // the value written in each cell (NaN cells stay grey)
  std::vector<std::pair<int, int>> outlined;        // (row, col) cells framed in red, e.g. the training budget
};

/// Draws values[rows][cols] (rows top to bottom), coloured from the smallest to the largest finite value.
/// Throws vt::Error on ragged rows or label counts that do not match.
std::unique_ptr<Figure> draw_heatmap(const std::vector<std::vector<double>>& values, const HeatmapSpec& spec);

/// draw_heatmap saved at `path` (save_figure: a PNG gets an SVG beside it).
void write_heatmap(const std::vector<std::vector<double>>& values, const HeatmapSpec& spec, const std::string& path);

/// The pixel size (width, height) that draw_heatmap gives a rows × cols matrix with `spec`.
std::pair<int, int> heatmap_size(int rows, int cols, const HeatmapSpec& spec);

}  // namespace vt::figures
