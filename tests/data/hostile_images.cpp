#include "hostile_images.h"

#include <fstream>
#include <stdexcept>

#include "image_writers.h"

namespace vt::test {
namespace {

// PNG's CRC-32 (ISO 3309, reflected polynomial 0xEDB88320) over the chunk type and data.
uint32_t png_crc(const std::vector<uint8_t>& bytes, size_t begin, size_t end) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = begin; i < end; ++i) {
    c ^= bytes[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

void add_chunk(std::vector<uint8_t>& b, const char* type, const std::vector<uint8_t>& data) {
  put_u32(b, static_cast<uint32_t>(data.size()));
  const size_t start = b.size();
  b.insert(b.end(), type, type + 4);
  b.insert(b.end(), data.begin(), data.end());
  put_u32(b, png_crc(b, start, b.size()));
}

void write_all(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

void write_png_declaring(const std::string& path, uint32_t width, uint32_t height) {
  std::vector<uint8_t> b = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  std::vector<uint8_t> ihdr;
  put_u32(ihdr, width);
  put_u32(ihdr, height);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8-bit RGB, deflate, no filter method variant, no interlace
  add_chunk(b, "IHDR", ihdr);
  add_chunk(b, "IDAT", {0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01});  // a zlib stream of nothing
  add_chunk(b, "IEND", {});
  write_all(path, b);
}

void write_jpeg_declaring(const std::string& path, uint16_t width, uint16_t height) {
  write_jpeg_rgb(path, pattern_rgb(16, 16));
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), {});
  for (size_t i = 2; i + 9 < b.size(); ++i) {
    if (b[i] == 0xFF && (b[i + 1] == 0xC0 || b[i + 1] == 0xC2)) {  // SOF0/SOF2: len(2) precision(1) H(2) W(2)
      b[i + 5] = static_cast<uint8_t>(height >> 8), b[i + 6] = static_cast<uint8_t>(height);
      b[i + 7] = static_cast<uint8_t>(width >> 8), b[i + 8] = static_cast<uint8_t>(width);
      return write_all(path, b);
    }
  }
  throw std::runtime_error(path + ": no SOF marker to patch");
}

void write_random_bytes(const std::string& path, size_t count, uint32_t seed) {
  std::vector<uint8_t> b(count);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& v : b) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    v = static_cast<uint8_t>(x >> 8);
  }
  if (count > 0 && b[0] == 0xFF) b[0] = 0;  // never a JPEG's first byte
  if (count > 0 && b[0] == 0x89) b[0] = 0;  // nor a PNG's
  write_all(path, b);
}

void write_empty(const std::string& path) { write_all(path, {}); }

void write_truncated_jpeg(const std::string& path, int seed) {
  write_jpeg_rgb(path, pattern_rgb(40, 40, seed));
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), {});
  b.resize(b.size() * 3 / 4);  // past the headers (about 600 bytes), inside the entropy-coded data
  write_all(path, b);
}

std::vector<HostileFile> write_hostile_files(const std::string& dir) {
  const std::vector<HostileFile> files = {{dir + "/png_bomb.png", "more than data.max_image_pixels"},
                                          {dir + "/jpeg_bomb.JPEG", "more than data.max_image_pixels"},
                                          {dir + "/truncated.JPEG", "corrupt JPEG"},
                                          {dir + "/empty.JPEG", "not a JPEG or PNG file (0 bytes)"},
                                          {dir + "/noise.JPEG", "not a JPEG or PNG file (3000 bytes)"}};
  write_png_declaring(files[0].path, 100000, 100000);
  write_jpeg_declaring(files[1].path, 16000, 16000);
  write_truncated_jpeg(files[2].path, 3);
  write_empty(files[3].path);
  write_random_bytes(files[4].path, 3000, 7);
  return files;
}

}  // namespace vt::test
