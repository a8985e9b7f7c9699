// An annotated heat map from a CSV (figures::write_heatmap): the rows and columns are the distinct values of two
// columns in order of appearance, the cells a third column (missing cells stay grey). Redraws eval-sweep's
// mk_sweep.csv and eval-swap's swap.csv. OUT is .png (an .svg is written beside it), .svg or .pdf.
//   plot_heatmap IN.csv OUT.png --rows m --cols k --value top1 [--title T] [--row-title T] [--col-title T]
//                [--value-title T] [--outline ROW,COL]... [--decimals 2]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "figures/heatmap.h"
#include "tools/csv_columns.h"

namespace {

size_t index_of(std::vector<std::string>& labels, const std::string& v) {
  auto it = std::find(labels.begin(), labels.end(), v);
  if (it == labels.end()) it = labels.insert(labels.end(), v);
  return static_cast<size_t>(it - labels.begin());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"annotated heat map from a CSV, as PNG + SVG, SVG or PDF"};
  std::string in, out, row_col, col_col, value_col;
  std::vector<std::string> outlines;
  vt::figures::HeatmapSpec spec;
  app.add_option("input", in, "CSV file with a header")->required();
  app.add_option("output", out, "figure to write (.png, .svg, .pdf)")->required();
  app.add_option("--rows", row_col, "column whose values are the rows")->required();
  app.add_option("--cols", col_col, "column whose values are the columns")->required();
  app.add_option("--value", value_col, "column of the cell values")->required();
  app.add_option("--title", spec.title, "title");
  app.add_option("--row-title", spec.row_axis, "title of the rows' axis");
  app.add_option("--col-title", spec.col_axis, "title of the columns' axis");
  app.add_option("--value-title", spec.value_name, "title of the colour bar, with its unit");
  app.add_option("--outline", outlines, "frame the cell ROW,COL (values of the two columns), e.g. 25,25");
  app.add_option("--decimals", spec.decimals, "decimals written in each cell")->capture_default_str();
  app.add_option("--cell", spec.cell, "cell side in pixels")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    struct Cell {
      size_t r, c;
      double v;
    };
    std::vector<Cell> cells;
    for (const auto& row : vt::tools::read_csv_columns(in, {row_col, col_col, value_col}, "plot_heatmap"))
      cells.push_back(
          {index_of(spec.row_labels, row[0]), index_of(spec.col_labels, row[1]), vt::tools::csv_number(row[2])});
    std::vector<std::vector<double>> values(spec.row_labels.size(),
                                            std::vector<double>(spec.col_labels.size(), std::nan("")));
    for (const Cell& c : cells) values[c.r][c.c] = c.v;
    for (const std::string& o : outlines) {
      const size_t comma = o.find(',');
      VT_CHECK(comma != std::string::npos, "[plot_heatmap] --outline '", o, "': expected ROW,COL");
      const auto r = std::find(spec.row_labels.begin(), spec.row_labels.end(), o.substr(0, comma));
      const auto c = std::find(spec.col_labels.begin(), spec.col_labels.end(), o.substr(comma + 1));
      VT_CHECK(r != spec.row_labels.end() && c != spec.col_labels.end(), "[plot_heatmap] --outline '", o,
               "': no such row or column in ", in);
      spec.outlined.emplace_back(static_cast<int>(r - spec.row_labels.begin()),
                                 static_cast<int>(c - spec.col_labels.begin()));
    }
    vt::figures::write_heatmap(values, spec, out);
    std::printf("wrote %s (%zu x %zu)\n", out.c_str(), spec.row_labels.size(), spec.col_labels.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_heatmap: %s\n", e.what());
    return 1;
  }
  return 0;
}
