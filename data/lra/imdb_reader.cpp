#include "data/lra/imdb_reader.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "data/image_decode.h"
#include "data/lra/byte_tokens.h"

namespace fs = std::filesystem;

namespace vt::data::lra {
namespace {

std::vector<std::string> review_files(const fs::path& dir) {
  VT_CHECK(fs::is_directory(dir), "[data] LRA text: folder ", dir.string(), " does not exist");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path().string());
  VT_CHECK(!files.empty(), "[data] LRA text: ", dir.string(), " has no .txt reviews");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::vector<SequenceExample> read_imdb_part(const std::string& aclimdb_dir, const std::string& part, int64_t max_length,
                                            int64_t limit) {
  const fs::path dir = fs::path(aclimdb_dir) / part;
  const std::vector<std::string> classes[2] = {review_files(dir / "neg"), review_files(dir / "pos")};
  const size_t total = classes[0].size() + classes[1].size();
  const size_t keep = limit > 0 ? std::min(total, static_cast<size_t>(limit)) : total;
  std::vector<SequenceExample> out;
  out.reserve(keep);
  for (size_t i = 0; out.size() < keep; ++i) {
    for (int32_t label = 0; label < 2 && out.size() < keep; ++label) {
      if (i >= classes[label].size()) continue;
      const std::vector<uint8_t> bytes = read_file_bytes(classes[label][i]);
      SequenceExample ex;
      ex.tokens = byte_tokens({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, max_length);
      VT_CHECK(!ex.tokens.empty(), "[data] LRA text: ", classes[label][i], " is empty");
      ex.label = label;
      out.push_back(std::move(ex));
    }
  }
  return out;
}

}  // namespace vt::data::lra
