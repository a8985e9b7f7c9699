#include "data/lra/aan_reader.h"

#include <fstream>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "data/lra/byte_tokens.h"
#include "data/lra/text_lines.h"

namespace vt::data::lra {

std::vector<SequenceExample> read_aan_tsv(const std::string& path, int64_t max_length, int64_t limit) {
  std::ifstream in(path, std::ios::binary);
  VT_CHECK(in.good(), "[data] LRA retrieval: cannot open ", path);
  std::vector<SequenceExample> out;
  std::string line;
  for (int64_t line_no = 1; (limit <= 0 || static_cast<int64_t>(out.size()) < limit) && next_line(in, line);
       ++line_no) {
    if (line.empty()) continue;
    std::vector<std::string_view> fields;
    for (size_t from = 0;;) {
      const size_t tab = line.find('\t', from);
      fields.emplace_back(line.data() + from, (tab == std::string::npos ? line.size() : tab) - from);
      if (tab == std::string::npos) break;
      from = tab + 1;
    }
    VT_CHECK(fields.size() == 5, "[data] LRA retrieval: ", path, ":", line_no, ": ", fields.size(),
             " tab-separated columns, expected five (label, id1, id2, text1, text2)");
    SequenceExample ex;
    ex.label = parse_label(std::string(fields[0]), 2, path, line_no);
    ex.tokens = byte_tokens(fields[3], max_length);
    ex.tokens2 = byte_tokens(fields[4], max_length);
    VT_CHECK(!ex.tokens.empty() && !ex.tokens2.empty(), "[data] LRA retrieval: ", path, ":", line_no,
             ": a document's text is empty");
    out.push_back(std::move(ex));
  }
  return out;
}

}  // namespace vt::data::lra
