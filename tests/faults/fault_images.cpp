// The generated image data of scripts/faults.sh: a small ImageFolder tree of good JPEGs and PNGs, and one file of
// each hostile kind (bombs, truncated and corrupt files, files that are not images) for the script to drop in.
//   fault_images DIR CLASSES TRAIN_PER_CLASS VAL_PER_CLASS
// writes DIR/{train,val}/class<c>/<i>.{jpg,png} (40x40, each class its own pattern) and DIR/hostile/*, and prints
// one line per hostile file: its name and a part of the error every reader must give for it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/hostile_images.h"
#include "data/image_writers.h"

namespace {

namespace fs = std::filesystem;

std::vector<char> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_all(const fs::path& p, const std::vector<char>& b) {
  std::ofstream(p, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}

// A real 40x40 PNG with one byte of its compressed image data changed: the IDAT CRC no longer matches.
void write_png_bad_crc(const fs::path& p) {
  vt::test::write_png(p.string(), vt::test::pattern_rgb(40, 40, 5));
  std::vector<char> b = read_all(p);
  const std::string idat = "IDAT";
  const auto at = std::search(b.begin(), b.end(), idat.begin(), idat.end());
  if (at == b.end() || at + 8 >= b.end()) throw std::runtime_error(p.string() + ": no IDAT chunk");
  at[6] = static_cast<char>(at[6] ^ 0x5A);
  write_all(p, b);
}

void write_truncated_png(const fs::path& p) {
  vt::test::write_png(p.string(), vt::test::pattern_rgb(40, 40, 6));
  std::vector<char> b = read_all(p);
  b.resize(b.size() / 2);
  write_all(p, b);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: fault_images DIR CLASSES TRAIN_PER_CLASS VAL_PER_CLASS\n");
    return 2;
  }
  try {
    const fs::path root = argv[1];
    const int classes = std::atoi(argv[2]);
    const int per_split[2] = {std::atoi(argv[3]), std::atoi(argv[4])};
    const char* splits[2] = {"train", "val"};
    for (int s = 0; s < 2; ++s)
      for (int c = 0; c < classes; ++c) {
        const fs::path dir = root / splits[s] / ("class" + std::to_string(c));
        fs::create_directories(dir);
        for (int i = 0; i < per_split[s]; ++i) {
          const cv::Mat img = vt::test::pattern_rgb(40, 40, 10 * c + i % 3);
          const std::string stem = (dir / std::to_string(i)).string();
          if (i % 4 == 3) vt::test::write_png(stem + ".png", img);
          else vt::test::write_jpeg_rgb(stem + ".jpg", img);
        }
      }
    const fs::path hostile = root / "hostile";
    fs::create_directories(hostile);
    std::vector<vt::test::HostileFile> files = vt::test::write_hostile_files(hostile.string());
    vt::test::write_png_declaring((hostile / "png_big.png").string(), 20000, 20000);
    files.push_back({(hostile / "png_big.png").string(), "more than data.max_image_pixels"});
    write_png_bad_crc(hostile / "bad_crc.png");
    files.push_back({(hostile / "bad_crc.png").string(), "PNG"});
    write_truncated_png(hostile / "truncated.png");
    files.push_back({(hostile / "truncated.png").string(), "PNG"});
    for (const auto& f : files) std::printf("%s\t%s\n", fs::path(f.path).filename().c_str(), f.reason.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_images: %s\n", e.what());
    return 1;
  }
  return 0;
}
