// A line chart from a CSV (figures::draw_chart), log-log by default, for benchmark curves such as Figure 5's
// samples/s vs N. The CSV has a header; one line is drawn per distinct value of the series column, in order of
// appearance. OUT is .png (an .svg is written beside it), .svg or .pdf.
//   plot_xy IN.csv OUT.png [--title TEXT] [--x-title TEXT] [--y-title TEXT] [--linear] [--series series] [--x x]
//           [--y y]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>

#include "figures/chart.h"
#include "tools/csv_columns.h"

namespace {

std::vector<vt::figures::Series> read_series(const std::string& path, const std::string& series_col,
                                             const std::string& x_col, const std::string& y_col) {
  std::vector<vt::figures::Series> out;
  for (const auto& row : vt::tools::read_csv_columns(path, {series_col, x_col, y_col}, "plot_xy")) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& s) { return s.name == row[0]; });
    if (it == out.end()) it = out.insert(out.end(), vt::figures::Series{row[0], {}, true, false});
    // A failed run's empty cell is NaN: the chart leaves a gap there.
    it->points.emplace_back(vt::tools::csv_number(row[1]), vt::tools::csv_number(row[2]));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"line chart (log-log unless --linear) from a CSV, as PNG + SVG, SVG or PDF"};
  std::string in, out, series_col = "series", x_col = "x", y_col = "y";
  vt::figures::ChartSpec spec;
  spec.log_x = spec.log_y = true;
  bool linear = false;
  app.add_option("input", in, "CSV file with a header")->required();
  app.add_option("output", out, "figure to write (.png, .svg, .pdf)")->required();
  app.add_option("--title", spec.title, "chart title");
  app.add_option("--x-title", spec.x_title, "x axis title, with its unit");
  app.add_option("--y-title", spec.y_title, "y axis title, with its unit");
  app.add_flag("--linear", linear, "linear axes");
  app.add_option("--series", series_col, "column naming the series")->capture_default_str();
  app.add_option("--x", x_col, "x column")->capture_default_str();
  app.add_option("--y", y_col, "y column")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (linear) spec.log_x = spec.log_y = false;
  try {
    const auto series = read_series(in, series_col, x_col, y_col);
    const auto fig = vt::figures::draw_chart(series, spec, out);
    for (const auto& p : vt::figures::save_figure(*fig, out))
      std::printf("wrote %s (%zu series)\n", p.c_str(), series.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_xy: %s\n", e.what());
    return 1;
  }
  return 0;
}
