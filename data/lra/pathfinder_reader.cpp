#include "data/lra/pathfinder_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "data/image_decode.h"
#include "data/lra/text_lines.h"
#include "data/sample_rng.h"

namespace fs = std::filesystem;

namespace vt::data::lra {
namespace {

// Sort key of a metadata file: numeric names by value first (LRA globbed them in no particular order; any fixed
// order gives the same pool), then the rest by name.
std::pair<int64_t, std::string> metadata_order(const fs::path& p) {
  const std::string stem = p.stem().string();
  const bool numeric = !stem.empty() && stem.size() < 18 &&
                       std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; });
  return {numeric ? std::stoll(stem) : INT64_MAX, p.filename().string()};
}

}  // namespace

std::vector<PathfinderEntry> read_pathfinder_metadata(const std::string& difficulty_dir) {
  const fs::path dir(difficulty_dir), meta_dir = dir / "metadata";
  VT_CHECK(fs::is_directory(meta_dir), "[data] LRA pathfinder: folder ", meta_dir.string(), " does not exist");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(meta_dir))
    if (e.is_regular_file() && e.path().extension() == ".npy") files.push_back(e.path());
  VT_CHECK(!files.empty(), "[data] LRA pathfinder: ", meta_dir.string(), " has no .npy metadata files");
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return metadata_order(a) < metadata_order(b); });
  std::vector<PathfinderEntry> out;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    VT_CHECK(in.good(), "[data] LRA pathfinder: cannot open ", file.string());
    std::string line;
    for (int64_t line_no = 1; next_line(in, line); ++line_no) {
      if (line.empty()) continue;
      std::istringstream fields(line);
      std::string folder, name, index, label;
      VT_CHECK(static_cast<bool>(fields >> folder >> name >> index >> label), "[data] LRA pathfinder: ", file.string(),
               ":", line_no, ": expected at least four space-separated columns (folder, file, index, label)");
      out.push_back({(dir / folder / name).string(), parse_label(label, 2, file.string(), line_no)});
    }
  }
  return out;
}

int64_t pathfinder_split_size(int64_t pool, const std::string& split) {
  const int64_t a = pool * 8 / 10, b = pool * 9 / 10;
  return split == "train" ? a : split == "val" ? b - a : pool - b;
}

std::vector<PathfinderEntry> pathfinder_split(std::vector<PathfinderEntry> all, const std::string& split) {
  const size_t n = all.size();
  SampleRng rng(/*seed=*/0, 0, static_cast<int64_t>(n), /*stream=*/0x5046);
  for (size_t i = n; i > 1; --i)
    std::swap(all[i - 1], all[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(i) - 1))]);
  const auto a = static_cast<size_t>(pathfinder_split_size(static_cast<int64_t>(n), "train"));
  const size_t b = a + static_cast<size_t>(pathfinder_split_size(static_cast<int64_t>(n), "val"));
  const size_t begin = split == "train" ? 0 : split == "val" ? a : b;
  const size_t end = split == "train" ? a : split == "val" ? b : n;
  return {all.begin() + static_cast<std::ptrdiff_t>(begin), all.begin() + static_cast<std::ptrdiff_t>(end)};
}

std::vector<SequenceExample> read_pathfinder_split(const std::string& difficulty_dir, const std::string& split,
                                                   int64_t max_length, int64_t limit) {
  const std::vector<PathfinderEntry> entries = pathfinder_split(read_pathfinder_metadata(difficulty_dir), split);
  const auto length = static_cast<size_t>(std::min<int64_t>(1024, max_length));
  std::vector<SequenceExample> out;
  for (const PathfinderEntry& e : entries) {
    if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
    const std::vector<uint8_t> bytes = read_file_bytes(e.image);
    if (bytes.empty()) continue;
    const cv::Mat img = decode_rgb(bytes, e.image);
    VT_CHECK(img.cols == 32 && img.rows == 32, "[data] LRA pathfinder: ", e.image, " is ", img.cols, "x", img.rows,
             ", expected 32x32");
    SequenceExample ex;
    ex.label = e.label;
    ex.tokens.resize(length);
    for (size_t p = 0; p < length; ++p) {
      const uint8_t* px = img.ptr<uint8_t>(static_cast<int>(p / 32)) + 3 * (p % 32);
      VT_CHECK(px[0] == px[1] && px[1] == px[2], "[data] LRA pathfinder: ", e.image, " is not a gray image");
      ex.tokens[p] = 1 + px[0];
    }
    out.push_back(std::move(ex));
  }
  return out;
}

}  // namespace vt::data::lra
