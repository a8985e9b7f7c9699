// ListOps as the LRA release ships it: a tab-separated file with the header "Source\tTarget", one expression and
// its value a line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/lra/sequence_set.h"

namespace vt::data::lra {

/// The examples of one basic_{train,val,test}.tsv, each expression truncated to `max_length` tokens, at most
/// `limit` of them (0: all). A bad header, symbol or label throws naming the file and line.
std::vector<SequenceExample> read_listops_tsv(const std::string& path, int64_t max_length, int64_t limit = 0);

}  // namespace vt::data::lra
