#include "data/lra/cifar_reader.h"

#include <algorithm>

#include "core/error.h"
#include "data/image_decode.h"

namespace vt::data::lra {

uint8_t lra_gray(uint8_t r, uint8_t g, uint8_t b) {
  // Written step by step in float32, in TensorFlow's order, so the truncation sees the same value.
  const float scale = static_cast<float>(1.0 / 255.0);
  const float rf = static_cast<float>(r) * scale, gf = static_cast<float>(g) * scale,
              bf = static_cast<float>(b) * scale;
  const float wr = rf * 0.2989f, wg = gf * 0.5870f, wb = bf * 0.1140f;
  const float sum = (wr + wg) + wb;
  const float scaled = sum * 255.5f;
  return static_cast<uint8_t>(std::clamp(scaled, 0.0f, 255.0f));
}

std::vector<SequenceExample> read_cifar_batch(const std::string& path, int64_t max_length, int64_t first,
                                              int64_t count) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  const auto size = static_cast<int64_t>(bytes.size());
  VT_CHECK(size > 0 && size % kCifarRecordBytes == 0, "[data] LRA image: ", path, " has ", size,
           " bytes, not a whole number of ", kCifarRecordBytes, "-byte CIFAR-10 records");
  const int64_t records = size / kCifarRecordBytes;
  const int64_t begin = std::min(first, records), end = count < 0 ? records : std::min(records, first + count);
  const int64_t length = std::min<int64_t>(1024, max_length);
  std::vector<SequenceExample> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(end - begin, 0)));
  for (int64_t i = begin; i < end; ++i) {
    const uint8_t* rec = bytes.data() + i * kCifarRecordBytes;
    VT_CHECK(rec[0] <= 9, "[data] LRA image: ", path, ": record ", i, " has label ", int(rec[0]),
             " (CIFAR-10 has 0..9)");
    SequenceExample ex;
    ex.label = rec[0];
    ex.tokens.resize(static_cast<size_t>(length));
    for (int64_t p = 0; p < length; ++p)
      ex.tokens[static_cast<size_t>(p)] = 1 + lra_gray(rec[1 + p], rec[1 + 1024 + p], rec[1 + 2048 + p]);
    out.push_back(std::move(ex));
  }
  return out;
}

}  // namespace vt::data::lra
