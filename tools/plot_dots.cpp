// A dot chart with error bars from a CSV (engine::plot_dots), e.g. the proxy study's mean ± std per variant.
//   plot_dots IN.csv OUT.png [--title TEXT] [--reference X] [--label label] [--value mean] [--error std]
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "engine/plot.h"

namespace {

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) {
    if (!cell.empty() && cell.back() == '\r') cell.pop_back();
    cells.push_back(cell);
  }
  return cells;
}

std::vector<vt::engine::DotRow> read_rows(const std::string& path, const std::string& label, const std::string& value,
                                          const std::string& error) {
  std::ifstream f(path);
  VT_CHECK(f, "[plot_dots] cannot open '", path, "'");
  std::string line;
  VT_CHECK(std::getline(f, line), "[plot_dots] ", path, " is empty");
  const auto header = cells_of(line);
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    VT_FAIL("[plot_dots] ", path, ": no column '", name, "' in the header");
  };
  const size_t il = column(label), iv = column(value), ie = column(error);
  std::vector<vt::engine::DotRow> rows;
  for (int line_no = 2; std::getline(f, line); ++line_no) {
    if (line.empty()) continue;
    const auto cells = cells_of(line);
    VT_CHECK(cells.size() > std::max({il, iv, ie}), "[plot_dots] ", path, ":", line_no, ": too few columns");
    rows.push_back({cells[il], std::strtod(cells[iv].c_str(), nullptr), std::strtod(cells[ie].c_str(), nullptr)});
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dot chart with error bars (PNG) from a CSV"};
  std::string in, out, title, label = "label", value = "mean", error = "std";
  double reference = std::nan("");
  app.add_option("input", in, "CSV file with a header")->required();
  app.add_option("output", out, "PNG file to write")->required();
  app.add_option("--title", title, "chart title");
  app.add_option("--reference", reference, "draw a dashed line at this value");
  app.add_option("--label", label, "label column")->capture_default_str();
  app.add_option("--value", value, "value column")->capture_default_str();
  app.add_option("--error", error, "error (± half-width) column")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto rows = read_rows(in, label, value, error);
    vt::engine::plot_dots(rows, out, title, reference);
    std::printf("wrote %s (%zu rows)\n", out.c_str(), rows.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_dots: %s\n", e.what());
    return 1;
  }
  return 0;
}
