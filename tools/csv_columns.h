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
/// (a missing file, an empty file, a column not in the header, a row with too few cells). Empty lines are skipped;
/// cells may be quoted ("(m, k) = (16, 25)").
inline std::vector<std::vector<std::string>> read_csv_columns(const std::string& path,
                                                              const std::vector<std::string>& names,
                                                              const std::string& tool) {
  auto split = [](std::string line) {  // RFC 4180: a cell in double quotes may hold commas, "" is a quote
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
      else if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.emplace_back();
      else cells.back() += c;
    }
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
