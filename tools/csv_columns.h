// CSV input of the chart tools (plot_xy, plot_dots): a header line naming the columns, then one row per line.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace vt::tools {

/// The rows of `path` as the cells of the requested columns, in the order asked; `tool` prefixes the errors
/// (a missing file, an empty file, a column not in the header, a row with too few cells). Empty lines are skipped.
inline std::vector<std::vector<std::string>> read_csv_columns(const std::string& path,
                                                              const std::vector<std::string>& names,
                                                              const std::string& tool) {
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) {
      if (!cell.empty() && cell.back() == '\r') cell.pop_back();
      cells.push_back(cell);
    }
    if (!line.empty() && line.back() == ',') cells.emplace_back();  // getline drops a trailing empty cell
    return cells;
  };
  std::ifstream f(path);
  VT_CHECK(f, "[", tool, "] cannot open '", path, "'");
  std::string line;
  VT_CHECK(std::getline(f, line), "[", tool, "] ", path, " is empty");
  const auto header = split(line);
  std::vector<size_t> at;
  for (const auto& name : names) {
    const auto it = std::find(header.begin(), header.end(), name);
    VT_CHECK(it != header.end(), "[", tool, "] ", path, ": no column '", name, "' in the header");
    at.push_back(static_cast<size_t>(it - header.begin()));
  }
  std::vector<std::vector<std::string>> rows;
  for (int line_no = 2; std::getline(f, line); ++line_no) {
    if (line.empty()) continue;
    const auto cells = split(line);
    VT_CHECK(cells.size() > *std::max_element(at.begin(), at.end()), "[", tool, "] ", path, ":", line_no,
             ": too few columns");
    std::vector<std::string> row;
    for (size_t i : at) row.push_back(cells[i]);
    rows.push_back(row);
  }
  return rows;
}

/// A cell as a number; an empty or non-numeric cell (a failed run) reads as NaN.
inline double csv_number(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end != s.c_str() ? v : std::nan("");
}

}  // namespace vt::tools
