// A dot chart with error bars from a CSV (figures::draw_dots), e.g. the proxy study's mean ± std per variant.
// OUT is .png (an .svg is written beside it), .svg or .pdf.
//   plot_dots IN.csv OUT.png [--title TEXT] [--x-title TEXT] [--reference X] [--label label] [--value mean]
//             [--error std]
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>

#include "figures/chart.h"
#include "tools/csv_columns.h"

namespace {

std::vector<vt::figures::DotRow> read_rows(const std::string& path, const std::string& label, const std::string& value,
                                           const std::string& error) {
  std::vector<vt::figures::DotRow> rows;
  for (const auto& row : vt::tools::read_csv_columns(path, {label, value, error}, "plot_dots"))
    rows.push_back({row[0], vt::tools::csv_number(row[1]), vt::tools::csv_number(row[2])});
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dot chart with error bars from a CSV, as PNG + SVG, SVG or PDF"};
  std::string in, out, title, x_title, label = "label", value = "mean", error = "std";
  double reference = std::nan("");
  app.add_option("input", in, "CSV file with a header")->required();
  app.add_option("output", out, "figure to write (.png, .svg, .pdf)")->required();
  app.add_option("--title", title, "chart title");
  app.add_option("--x-title", x_title, "axis title under the chart, with its unit");
  app.add_option("--reference", reference, "draw a dashed line at this value");
  app.add_option("--label", label, "label column")->capture_default_str();
  app.add_option("--value", value, "value column")->capture_default_str();
  app.add_option("--error", error, "error (± half-width) column")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto rows = read_rows(in, label, value, error);
    const auto fig = vt::figures::draw_dots(rows, title, x_title, reference, out);
    for (const auto& p : vt::figures::save_figure(*fig, out))
      std::printf("wrote %s (%zu rows)\n", p.c_str(), rows.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_dots: %s\n", e.what());
    return 1;
  }
  return 0;
}
