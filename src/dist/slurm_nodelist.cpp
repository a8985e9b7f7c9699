// SLURM list parsing: only what the launch needs (the first host; tasks per node), but the whole list is
// checked, so a garbled variable is reported instead of producing a wrong master address.
#include "dist/slurm_nodelist.h"

#include <cctype>

#include "core/error.h"

namespace vt::dist {
namespace {

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Splits at commas that are not inside brackets.
std::vector<std::string> split_top_level(const std::string& list, const std::string& what) {
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    VT_CHECK(depth == 0 || depth == 1, "[launch] ", what, " '", list, "': unbalanced brackets");
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  VT_CHECK(depth == 0, "[launch] ", what, " '", list, "': unbalanced brackets");
  items.push_back(cur);
  return items;
}

// "01-04,07" → "01" after checking every range is digits (and lo <= hi).
std::string first_of_range_set(const std::string& set, const std::string& list) {
  std::string first;
  size_t start = 0;
  while (start <= set.size()) {
    size_t comma = set.find(',', start);
    if (comma == std::string::npos) comma = set.size();
    const std::string range = set.substr(start, comma - start);
    const size_t dash = range.find('-');
    const std::string lo = range.substr(0, dash);
    const std::string hi = dash == std::string::npos ? lo : range.substr(dash + 1);
    VT_CHECK(all_digits(lo) && all_digits(hi) && lo.size() < 10 && hi.size() < 10 && std::stol(lo) <= std::stol(hi),
             "[launch] node list '", list, "': bad range '", range, "'");
    if (first.empty()) first = lo;
    start = comma + 1;
  }
  return first;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  VT_CHECK(!nodelist.empty(), "[launch] empty SLURM node list");
  std::string first_host;
  for (const std::string& item : split_top_level(nodelist, "node list")) {
    VT_CHECK(!item.empty(), "[launch] node list '", nodelist, "': empty host name");
    std::string host;
    size_t i = 0;
    while (i < item.size()) {
      if (item[i] == '[') {
        const size_t close = item.find(']', i);
        host += first_of_range_set(item.substr(i + 1, close - i - 1), nodelist);
        i = close + 1;
      } else {
        VT_CHECK(item[i] != ']', "[launch] node list '", nodelist, "': unbalanced brackets");
        host += item[i++];
      }
    }
    if (first_host.empty()) first_host = host;
  }
  return first_host;
}

std::vector<int> expand_slurm_tasks_per_node(const std::string& value, const std::string& variable) {
  std::vector<int> counts;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    const std::string item = value.substr(start, comma - start);
    // "4" or "4(x2)"
    const size_t paren = item.find('(');
    const std::string count = item.substr(0, paren);
    std::string repeat = "1";
    if (paren != std::string::npos) {
      VT_CHECK(item.size() > paren + 3 && item.compare(paren, 2, "(x") == 0 && item.back() == ')', "[launch] ",
               variable, "='", value, "': bad item '", item, "'");
      repeat = item.substr(paren + 2, item.size() - paren - 3);
    }
    VT_CHECK(all_digits(count) && all_digits(repeat) && count.size() < 7 && repeat.size() < 7, "[launch] ", variable,
             "='", value, "': bad item '", item, "'");
    const int n = std::stoi(count), times = std::stoi(repeat);
    VT_CHECK(n >= 1 && times >= 1 && counts.size() + times <= 100000, "[launch] ", variable, "='", value,
             "': bad item '", item, "'");
    counts.insert(counts.end(), static_cast<size_t>(times), n);
    start = comma + 1;
  }
  return counts;
}

}  // namespace vt::dist
