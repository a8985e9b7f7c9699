// Figure 4 redrawn from the selection_counts.csv that `vitrain viz experts` writes (layer,head,token,row,col,count;
// CLS has row = col = -1) with figures::draw_selection_map: one head's counts, or, when the file holds several heads
// (`--head mean`), their mean. OUT is .png (an .svg is written beside it) or .svg.
//   plot_selection_map selection_counts.csv OUT.png --experts 25
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <set>

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
    // counts[layer][token] summed over the heads the file holds (one, or every head of a mean-over-heads run).
    std::vector<std::vector<double>> counts;
    std::set<int64_t> heads;
    int64_t grid = 0;
    for (const auto& row :
         vt::tools::read_csv_columns(in, {"layer", "head", "token", "row", "count"}, "plot_selection_map")) {
      const auto layer = static_cast<size_t>(vt::tools::csv_number(row[0]));
      const auto token = static_cast<size_t>(vt::tools::csv_number(row[2]));
      VT_CHECK(layer >= 1, "[plot_selection_map] ", in, ": layer numbers start at 1");
      heads.insert(static_cast<int64_t>(vt::tools::csv_number(row[1])));
      grid = std::max<int64_t>(grid, static_cast<int64_t>(vt::tools::csv_number(row[3])) + 1);
      if (counts.size() < layer) counts.resize(layer);
      if (counts[layer - 1].size() <= token) counts[layer - 1].resize(token + 1, 0.0);
      counts[layer - 1][token] += vt::tools::csv_number(row[4]);
    }
    VT_CHECK(!heads.empty(), "[plot_selection_map] ", in, " has no rows");
    for (auto& layer : counts)
      for (double& c : layer) c /= static_cast<double>(heads.size());
    const int64_t head = heads.size() == 1 ? *heads.begin() : -1;
    vt::figures::draw_selection_map(
        counts, grid, vt::figures::selection_heads_label(head, static_cast<int64_t>(heads.size())), experts, out);
    std::printf("wrote %s (%zu layers, %lld x %lld tokens)\n", out.c_str(), counts.size(), static_cast<long long>(grid),
                static_cast<long long>(grid));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_selection_map: %s\n", e.what());
    return 1;
  }
  return 0;
}
