#include "data/lra/listops_reader.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "data/lra/listops_vocab.h"
#include "data/lra/text_lines.h"

namespace vt::data::lra {

std::vector<SequenceExample> read_listops_tsv(const std::string& path, int64_t max_length, int64_t limit) {
  std::ifstream in(path, std::ios::binary);
  VT_CHECK(in.good(), "[data] ListOps: cannot open ", path);
  std::string line;
  VT_CHECK(next_line(in, line), "[data] ListOps: ", path, " is empty (expected the header Source<TAB>Target)");
  VT_CHECK(line == "Source\tTarget", "[data] ListOps: ", path, ":1: the header is '", line,
           "', expected Source<TAB>Target");
  std::vector<SequenceExample> out;
  for (int64_t line_no = 2; (limit <= 0 || static_cast<int64_t>(out.size()) < limit) && next_line(in, line);
       ++line_no) {
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    VT_CHECK(tab != std::string::npos && line.find('\t', tab + 1) == std::string::npos, "[data] ListOps: ", path, ":",
             line_no, ": expected two tab-separated columns (Source, Target)");
    SequenceExample ex;
    ex.label = parse_label(line.substr(tab + 1), kListOpsClasses, path, line_no);
    std::istringstream symbols(line.substr(0, tab));
    for (std::string s; symbols >> s;) {
      const int32_t token = listops_token(s);
      VT_CHECK(token >= 0, "[data] ListOps: ", path, ":", line_no, ": unknown symbol '", s, "'");
      if (token > 0 && static_cast<int64_t>(ex.tokens.size()) < max_length) ex.tokens.push_back(token);
    }
    VT_CHECK(!ex.tokens.empty(), "[data] ListOps: ", path, ":", line_no, ": the expression is empty");
    out.push_back(std::move(ex));
  }
  return out;
}

}  // namespace vt::data::lra
