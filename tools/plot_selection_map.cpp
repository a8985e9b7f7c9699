// Figure 4 redrawn from the selection_counts.csv that `vitrain viz experts` writes (layer,head,token,row,col,count;
// CLS has row = col = -1) with figures::draw_selection_map. OUT is .png (an .svg is written beside it) or .svg.
//   plot_selection_map selection_counts.csv OUT.png --experts 25
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "figures/selection_map.h"
#include "tools/csv_columns.h"

int main(int argc, char** argv) {
  CLI::App app{"token-selection maps (Figure 4) from viz experts' selection_counts.csv"};
  std::string in, out;
  int64_t experts = 0;
  app.add_option("input", in, "selection_counts.csv")->required();
  app.add_option("output", out, "figure to write (.png, .svg)")->required();
  app.add_option("--experts", experts, "m, the number of experts (for the colour bar's title)")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<std::vector<int64_t>> counts;
    int64_t head = -1, grid = 0;
    for (const auto& row : vt::tools::read_csv_columns(in, {"layer", "head", "token", "row", "count"},
                                                       "plot_selection_map")) {
      const auto layer = static_cast<size_t>(vt::tools::csv_number(row[0]));
      const auto token = static_cast<size_t>(vt::tools::csv_number(row[2]));
      VT_CHECK(layer >= 1, "[plot_selection_map] ", in, ": layer numbers start at 1");
      head = static_cast<int64_t>(vt::tools::csv_number(row[1]));
      grid = std::max<int64_t>(grid, static_cast<int64_t>(vt::tools::csv_number(row[3])) + 1);
      if (counts.size() < layer) counts.resize(layer);
      if (counts[layer - 1].size() <= token) counts[layer - 1].resize(token + 1);
      counts[layer - 1][token] = static_cast<int64_t>(vt::tools::csv_number(row[4]));
    }
    vt::figures::draw_selection_map(counts, grid, head, experts, out);
    std::printf("wrote %s (%zu layers, %lld x %lld tokens)\n", out.c_str(), counts.size(), static_cast<long long>(grid),
                static_cast<long long>(grid));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_selection_map: %s\n", e.what());
    return 1;
  }
  return 0;
}
