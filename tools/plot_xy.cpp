// A log-log line chart from a CSV (engine::plot_xy_log), for benchmark curves such as Figure 5's samples/s vs N.
// The CSV has a header; one line is drawn per distinct value of the series column, in order of appearance.
//   plot_xy IN.csv OUT.png [--title TEXT] [--series series] [--x x] [--y y]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "engine/plot.h"
#include "tools/csv_columns.h"

namespace {

std::vector<vt::engine::XYSeries> read_series(const std::string& path, const std::string& series_col,
                                              const std::string& x_col, const std::string& y_col) {
  std::vector<vt::engine::XYSeries> out;
  for (const auto& row : vt::tools::read_csv_columns(path, {series_col, x_col, y_col}, "plot_xy")) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& s) { return s.name == row[0]; });
    if (it == out.end()) it = out.insert(out.end(), {row[0], {}});
    // A failed run's empty cell is NaN: plot_xy_log leaves a gap there.
    it->points.emplace_back(vt::tools::csv_number(row[1]), vt::tools::csv_number(row[2]));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"log-log line chart (PNG) from a CSV"};
  std::string in, out, title, series_col = "series", x_col = "x", y_col = "y";
  app.add_option("input", in, "CSV file with a header")->required();
  app.add_option("output", out, "PNG file to write")->required();
  app.add_option("--title", title, "chart title");
  app.add_option("--series", series_col, "column naming the series")->capture_default_str();
  app.add_option("--x", x_col, "x column")->capture_default_str();
  app.add_option("--y", y_col, "y column")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto series = read_series(in, series_col, x_col, y_col);
    vt::engine::plot_xy_log(series, out, title);
    std::printf("wrote %s (%zu series)\n", out.c_str(), series.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_xy: %s\n", e.what());
    return 1;
  }
  return 0;
}
