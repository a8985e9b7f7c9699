// ListOps' symbols as tokens: one fixed table for the reader, the generator and the model's embedding size.
#pragma once
#include <cstdint>
#include <string_view>

namespace vt::data::lra {

/// 0 = padding, 1..10 = the digits 0..9, 11..14 = [MIN [MAX [MED [SM, 15 = ] (the end of an operator's list).
constexpr int32_t kListOpsVocabSize = 16;
constexpr int64_t kListOpsMaxLength = 2000;
constexpr int64_t kListOpsClasses = 10;

/// The token of one whitespace-separated symbol of a ListOps expression; 0 for the release's "(" and ")", which
/// carry nothing the brackets do not and are left out; -1 for anything else.
inline int32_t listops_token(std::string_view symbol) {
  if (symbol.size() == 1 && symbol[0] >= '0' && symbol[0] <= '9') return 1 + (symbol[0] - '0');
  if (symbol == "[MIN") return 11;
  if (symbol == "[MAX") return 12;
  if (symbol == "[MED") return 13;
  if (symbol == "[SM") return 14;
  if (symbol == "]") return 15;
  if (symbol == "(" || symbol == ")") return 0;
  return -1;
}

}  // namespace vt::data::lra
