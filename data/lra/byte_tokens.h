// Byte-level text as tokens, as LRA's ByteTextEncoder encodes it: byte b becomes b + 1, so 0 stays padding.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

namespace vt::data::lra {

constexpr int64_t kByteVocabSize = 257;
constexpr int64_t kByteMaxLength = 4000;

/// The first `max_length` bytes of `text` as tokens 1..256.
inline std::vector<int32_t> byte_tokens(std::string_view text, int64_t max_length) {
  const size_t n = std::min(text.size(), static_cast<size_t>(std::max<int64_t>(max_length, 0)));
  std::vector<int32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(static_cast<unsigned char>(text[i])) + 1;
  return out;
}

}  // namespace vt::data::lra
