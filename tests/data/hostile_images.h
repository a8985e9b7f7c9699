// Hostile image files, written byte by byte: decompression bombs (a header declaring a huge size over a few bytes
// of data), and files that are not images at all.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt::test {

/// A PNG of about 65 bytes whose IHDR declares width x height RGB (valid CRCs, one empty IDAT).
void write_png_declaring(const std::string& path, uint32_t width, uint32_t height);
/// A small real JPEG (16x16) whose SOF is patched to declare width x height.
void write_jpeg_declaring(const std::string& path, uint16_t width, uint16_t height);
/// `count` pseudo-random bytes from `seed` (no image signature).
void write_random_bytes(const std::string& path, size_t count, uint32_t seed);
/// A 40x40 JPEG cut after three quarters of its bytes (complete headers, no end of image).
void write_truncated_jpeg(const std::string& path, int seed = 0);
/// An empty file.
void write_empty(const std::string& path);

struct HostileFile {
  std::string path;
  std::string reason;  // a part of the error every reader must give for it
};

/// Writes into `dir` (which must exist) one file of each hostile kind, all named as images: a PNG declaring
/// 100000x100000, a JPEG declaring 16000x16000, a truncated JPEG, a zero-byte file and random bytes named .JPEG.
std::vector<HostileFile> write_hostile_files(const std::string& dir);

}  // namespace vt::test
