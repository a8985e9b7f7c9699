// The ACL Anthology Network pairs of LRA's Retrieval task: tsv_data/new_aan_pairs.{train,eval,test}.tsv, no header,
// five tab-separated columns per line: label, the two paper ids, the two documents' texts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/lra/sequence_set.h"

namespace vt::data::lra {

/// The pairs of one file as byte tokens (tokens = text1, tokens2 = text2), each truncated to `max_length`; at most
/// `limit` of them (0: all). A line without five columns or with a label other than 0/1 throws naming file:line.
std::vector<SequenceExample> read_aan_tsv(const std::string& path, int64_t max_length, int64_t limit = 0);

}  // namespace vt::data::lra
