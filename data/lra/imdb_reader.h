// IMDB reviews (Maas et al. 2011) as the aclImdb archive unpacks: <aclImdb>/{train,test}/{neg,pos}/*.txt.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/lra/sequence_set.h"

namespace vt::data::lra {

/// The reviews of `<aclimdb_dir>/<part>` ("train" or "test") as byte tokens truncated to `max_length`; label 0 =
/// neg, 1 = pos. Each class's files in name order, the classes interleaved (neg, pos, neg, ...) so that a
/// `limit` (0: all) keeps both. A missing folder or an unreadable file throws naming it.
std::vector<SequenceExample> read_imdb_part(const std::string& aclimdb_dir, const std::string& part, int64_t max_length,
                                            int64_t limit = 0);

}  // namespace vt::data::lra
