#include "data/lra/sequence_set.h"

#include <filesystem>

#include "core/error.h"
#include "data/lra/aan_reader.h"
#include "data/lra/byte_tokens.h"
#include "data/lra/cifar_reader.h"
#include "data/lra/imdb_reader.h"
#include "data/lra/listops_reader.h"
#include "data/lra/listops_vocab.h"
#include "data/lra/pathfinder_reader.h"

namespace fs = std::filesystem;

namespace vt::data::lra {
namespace {

fs::path require_folder(const fs::path& dir, const std::string& task) {
  VT_CHECK(fs::is_directory(dir), "[data] LRA ", task, ": folder ", dir.string(), " does not exist");
  return dir;
}

int64_t or_default(int64_t max_length, int64_t task_default) { return max_length > 0 ? max_length : task_default; }

void keep_first(std::vector<SequenceExample>& examples, int64_t limit) {
  if (limit > 0 && static_cast<int64_t>(examples.size()) > limit) examples.resize(static_cast<size_t>(limit));
}

SequenceSet load_listops(const fs::path& root, const std::string& split, int64_t max_length, int64_t limit) {
  const fs::path dir = require_folder(root / "listops-1000", "listops");
  SequenceSet set{"listops", {}, kListOpsVocabSize, kListOpsClasses, or_default(max_length, kListOpsMaxLength)};
  set.examples = read_listops_tsv((dir / ("basic_" + split + ".tsv")).string(), set.max_length, limit);
  return set;
}

// IMDB has no validation split: LRA evaluates on the test reviews.
SequenceSet load_text(const fs::path& root, const std::string& split, int64_t max_length, int64_t limit) {
  const fs::path dir = require_folder(root / "aclImdb", "text");
  SequenceSet set{"text", {}, kByteVocabSize, 2, or_default(max_length, kByteMaxLength)};
  set.examples = read_imdb_part(dir.string(), split == "train" ? "train" : "test", set.max_length, limit);
  return set;
}

SequenceSet load_retrieval(const fs::path& root, const std::string& split, int64_t max_length, int64_t limit) {
  const fs::path dir = require_folder(root / "tsv_data", "retrieval");
  SequenceSet set{"retrieval", {}, kByteVocabSize, 2, or_default(max_length, kByteMaxLength)};
  const std::string file = "new_aan_pairs." + std::string(split == "val" ? "eval" : split) + ".tsv";
  set.examples = read_aan_tsv((dir / file).string(), set.max_length, limit);
  return set;
}

// LRA's CIFAR-10 split: train = the first 90% of the training batches, val = the last 10%, test = test_batch.
SequenceSet load_image(const fs::path& root, const std::string& split, int64_t max_length, int64_t limit) {
  const fs::path dir = require_folder(root / "cifar-10-batches-bin", "image");
  SequenceSet set{"image", {}, kPixelVocabSize, 10, or_default(max_length, 1024)};
  if (split == "test") {
    set.examples = read_cifar_batch((dir / "test_batch.bin").string(), set.max_length, 0, limit > 0 ? limit : -1);
    return set;
  }
  std::vector<fs::path> batches;
  int64_t records = 0;
  for (int b = 1; b <= 5; ++b) {
    batches.push_back(dir / ("data_batch_" + std::to_string(b) + ".bin"));
    std::error_code ec;
    const auto size = fs::file_size(batches.back(), ec);
    VT_CHECK(!ec, "[data] LRA image: cannot read ", batches.back().string(), ": ", ec.message());
    records += static_cast<int64_t>(size) / kCifarRecordBytes;
  }
  const int64_t cut = records * 9 / 10;
  const int64_t begin = split == "train" ? 0 : cut;
  int64_t end = split == "train" ? cut : records;
  if (limit > 0) end = std::min(end, begin + limit);
  int64_t offset = 0;  // the first record of the current batch in the concatenation
  for (const fs::path& batch : batches) {
    const auto n = static_cast<int64_t>(fs::file_size(batch)) / kCifarRecordBytes;
    if (begin < offset + n && end > offset) {
      const int64_t first = std::max(begin, offset) - offset, last = std::min(end, offset + n) - offset;
      std::vector<SequenceExample> part = read_cifar_batch(batch.string(), set.max_length, first, last - first);
      for (auto& ex : part) set.examples.push_back(std::move(ex));
    }
    offset += n;
  }
  return set;
}

SequenceSet load_pathfinder(const fs::path& root, const std::string& split, int64_t max_length, int64_t limit) {
  const fs::path dir = require_folder(root / kPathfinderFolder, "pathfinder");
  SequenceSet set{"pathfinder", {}, kPixelVocabSize, 2, or_default(max_length, 1024)};
  set.examples = read_pathfinder_split(dir.string(), split, set.max_length, limit);
  return set;
}

}  // namespace

SequenceSet load_sequence_set(const std::string& task, const std::string& root, const std::string& split,
                              int64_t max_length, int64_t limit) {
  VT_CHECK(split == "train" || split == "val" || split == "test", "[data] LRA ", task, ": unknown split '", split,
           "' (train, val or test)");
  VT_CHECK(fs::is_directory(root), "[data] LRA ", task, ": data folder ", root, " does not exist");
  SequenceSet set;
  if (task == "listops") {
    set = load_listops(root, split, max_length, limit);
  } else if (task == "text") {
    set = load_text(root, split, max_length, limit);
  } else if (task == "retrieval") {
    set = load_retrieval(root, split, max_length, limit);
  } else if (task == "image") {
    set = load_image(root, split, max_length, limit);
  } else if (task == "pathfinder") {
    set = load_pathfinder(root, split, max_length, limit);
  } else {
    VT_CHECK(false, "[data] unknown LRA task '", task, "' (listops, text, retrieval, image or pathfinder)");
  }
  keep_first(set.examples, limit);
  VT_CHECK(!set.examples.empty(), "[data] LRA ", task, ": the ", split, " split under ", root, " has no examples");
  return set;
}

}  // namespace vt::data::lra
