// A log-log line chart from a CSV (engine::plot_xy_log), for benchmark curves such as Figure 5's samples/s vs N.
// The CSV has a header; one line is drawn per distinct value of the series column, in order of appearance.
//   plot_xy IN.csv OUT.png [--title TEXT] [--series series] [--x x] [--y y]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "engine/plot.h"

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) {
    if (!cell.empty() && cell.back() == '\r') cell.pop_back();
    cells.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') cells.emplace_back();  // getline drops a trailing empty cell
  return cells;
}

size_t column(const std::vector<std::string>& header, const std::string& name, const std::string& path) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  VT_FAIL("[plot_xy] ", path, ": no column '", name, "' in the header");
}

std::vector<vt::engine::XYSeries> read_series(const std::string& path, const std::string& series_col,
                                              const std::string& x_col, const std::string& y_col) {
  std::ifstream f(path);
  VT_CHECK(f, "[plot_xy] cannot open '", path, "'");
  std::string line;
  VT_CHECK(std::getline(f, line), "[plot_xy] ", path, " is empty");
  const auto header = split_csv_line(line);
  const size_t is = column(header, series_col, path), ix = column(header, x_col, path),
               iy = column(header, y_col, path);
  std::vector<vt::engine::XYSeries> out;
  for (int line_no = 2; std::getline(f, line); ++line_no) {
    if (line.empty()) continue;
    const auto cells = split_csv_line(line);
    VT_CHECK(cells.size() > std::max({is, ix, iy}), "[plot_xy] ", path, ":", line_no, ": too few columns");
    // An empty or non-numeric cell (a failed run) reads as NaN: plot_xy_log leaves a gap there.
    auto number = [](const std::string& s) {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      return end != s.c_str() ? v : std::nan("");
    };
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& s) { return s.name == cells[is]; });
    if (it == out.end()) it = out.insert(out.end(), {cells[is], {}});
    it->points.emplace_back(number(cells[ix]), number(cells[iy]));
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
