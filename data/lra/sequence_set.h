// The Long Range Arena's five tasks as token sequences in memory: what every reader and generator produces and
// what the sequence-classification task trains on. Tokens are small integers (bytes, characters, pixels or
// ListOps symbols); 0 is padding and never a real token.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt::data::lra {

struct SequenceExample {
  std::vector<int32_t> tokens;   ///< 1..vocab_size-1, at most SequenceSet::max_length
  std::vector<int32_t> tokens2;  ///< the second document of a Retrieval pair; empty for the other tasks
  int32_t label = 0;             ///< 0..num_classes-1
};

struct SequenceSet {
  std::string task;  ///< "listops", "text", "retrieval", "image" or "pathfinder"
  std::vector<SequenceExample> examples;
  int64_t vocab_size = 0;  ///< tokens are < vocab_size (0 = padding included)
  int64_t num_classes = 0;
  int64_t max_length = 0;  ///< sequences are truncated to it; the model pads to it
  bool pairs() const { return task == "retrieval"; }
};

/// Reads `split` ("train", "val" or "test") of `task` from `root`, laid out as the LRA release, IMDB's aclImdb
/// and CIFAR-10's binary batches are (data/lra/README.md), truncated to `max_length` tokens (≤ 0: the task's
/// length), keeping at most `limit` examples (0: all). Errors name the file or folder and the line.
SequenceSet load_sequence_set(const std::string& task, const std::string& root, const std::string& split,
                              int64_t max_length, int64_t limit = 0);

}  // namespace vt::data::lra
