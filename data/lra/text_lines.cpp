#include "data/lra/text_lines.h"

#include <charconv>
#include <cmath>

#include "core/error.h"

namespace vt::data::lra {

bool next_line(std::istream& in, std::string& line) {
  if (!std::getline(in, line)) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

int32_t parse_label(const std::string& text, int64_t num_classes, const std::string& path, int64_t line_no) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  VT_CHECK(ec == std::errc() && ptr == end && value == std::floor(value) && value >= 0 &&
               value < static_cast<double>(num_classes),
           "[data] ", path, ":", line_no, ": bad label '", text, "' (expected an integer in 0..", num_classes - 1, ")");
  return static_cast<int32_t>(value);
}

}  // namespace vt::data::lra
