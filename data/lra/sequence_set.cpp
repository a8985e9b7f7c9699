#include "data/lra/sequence_set.h"

#include <filesystem>

#include "core/error.h"
#include "data/lra/listops_reader.h"
#include "data/lra/listops_vocab.h"

namespace fs = std::filesystem;

namespace vt::data::lra {
namespace {

void require_folder(const fs::path& dir, const std::string& task) {
  VT_CHECK(fs::is_directory(dir), "[data] LRA ", task, ": folder ", dir.string(), " does not exist");
}

SequenceSet load_listops(const fs::path& root, const std::string& split, int64_t max_length, int64_t limit) {
  const fs::path dir = root / "listops-1000";
  require_folder(dir, "listops");
  SequenceSet set;
  set.vocab_size = kListOpsVocabSize;
  set.num_classes = kListOpsClasses;
  set.max_length = max_length > 0 ? max_length : kListOpsMaxLength;
  set.examples = read_listops_tsv((dir / ("basic_" + split + ".tsv")).string(), set.max_length, limit);
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
  } else {
    VT_CHECK(false, "[data] unknown LRA task '", task, "' (listops, text, retrieval, image or pathfinder)");
  }
  set.task = task;
  return set;
}

}  // namespace vt::data::lra
