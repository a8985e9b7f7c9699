// Line and label parsing shared by the LRA readers of tab-separated files.
#pragma once
#include <cstdint>
#include <istream>
#include <string>

namespace vt::data::lra {

/// The next line without its "\n" or "\r\n" (Python's csv module writes "\r\n"); false at the end.
bool next_line(std::istream& in, std::string& line);

/// A class label in [0, num_classes): an integer, or a float with an integral value ("1.0", as the AAN files
/// have). Anything else throws naming path:line_no.
int32_t parse_label(const std::string& text, int64_t num_classes, const std::string& path, int64_t line_no);

}  // namespace vt::data::lra
