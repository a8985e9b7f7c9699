// Hostile safetensors files: hundreds of deterministic mutations of a valid file (every truncation, flipped and
// random bytes in the header and data, huge lengths, hostile numbers spliced into the JSON) must each either
// load (a mutation the format allows) or fail with a vt::Error naming the file, never crash. The libFuzzer
// version of this is scripts/fuzz.sh (tools/fuzz_safetensors.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "io_temp_dir.h"

namespace vt::test {
namespace {

const std::string kLabel = "hostile.safetensors";

// A small valid file: several dtypes, a 0-dim and an empty tensor, metadata.
std::string valid_file() {
  TempDir dir;
  const std::string path = dir.file("v.safetensors");
  io::save_safetensors(path,
                       {{"blocks.0.attn.qkv.weight", Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f32)},
                        {"pos_embed", Tensor::from_vector({0.5, -1.5}, {1, 2, 1}, DType::f64)},
                        {"step", Tensor::from_vector({7}, {}, DType::i64)},
                        {"empty", Tensor::zeros({0, 4}, DType::bf16)},
                        {"mask", Tensor::from_vector({1, 0, 1}, {3}, DType::u8)}},
                       {{"format", "pt"}});
  return read_bytes(path);
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// Loads `bytes`; returns "" on success, else the error (which must name the file).
std::string outcome(const std::string& bytes, const std::string& what) {
  try {
    const io::SafetensorsFile f = io::read_safetensors_bytes(bytes, kLabel);
    size_t total = 0;
    for (const auto& [n, t] : f.tensors) total += static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    EXPECT_LE(total, bytes.size()) << what;
    return "";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "[safetensors] " + kLabel) << what;
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not a vt::Error: " << e.what();
    return e.what();
  }
}

// splitmix64: a fixed sequence, so every run feeds the same mutations.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

TEST(SafetensorsHostile, EveryTruncationIsRejectedNamingTheFile) {
  const std::string good = valid_file();
  EXPECT_EQ(outcome(good, "intact"), "");
  for (size_t cut = 0; cut < good.size(); ++cut) {
    const std::string e = outcome(good.substr(0, cut), "cut at " + std::to_string(cut));
    EXPECT_FALSE(e.empty()) << "a file cut at " << cut << " of " << good.size() << " bytes loaded";
  }
  // The file path gives the same answers (a sample: the streaming reader checks sizes before reading).
  TempDir dir;
  const std::string path = dir.file("cut.safetensors");
  for (size_t cut : {size_t{0}, size_t{7}, size_t{8}, size_t{20}, good.size() - 1}) {
    write_bytes(path, good.substr(0, cut));
    EXPECT_CONTAINS(error_of([&] { io::read_safetensors(path); }), "[safetensors] " + path);
  }
}

TEST(SafetensorsHostile, FlippedAndRandomBytesNeverCrash) {
  const std::string good = valid_file();
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(good[i]);
  const size_t header_end = 8 + static_cast<size_t>(header_len);
  ASSERT_LT(header_end, good.size());
  Rng rng{42};
  int rejected = 0, loaded = 0;
  // Every bit of the length prefix and every header byte flipped once (bit chosen by the position).
  for (size_t i = 0; i < header_end; ++i) {
    std::string m = good;
    m[i] = static_cast<char>(m[i] ^ (1 << (i % 8)));
    outcome(m, "flip at " + std::to_string(i)).empty() ? ++loaded : ++rejected;
  }
  // Random bytes at random places, 1..8 of them, anywhere in the file.
  for (int trial = 0; trial < 400; ++trial) {
    std::string m = good;
    const int n = 1 + static_cast<int>(rng.next() % 8);
    for (int k = 0; k < n; ++k) m[rng.next() % m.size()] = static_cast<char>(rng.next());
    outcome(m, "random bytes, trial " + std::to_string(trial)).empty() ? ++loaded : ++rejected;
  }
  // Data bytes are covered by the writer's checksums: flipping any of them is an error naming a tensor.
  for (size_t i = header_end; i < good.size(); ++i) {
    std::string m = good;
    m[i] = static_cast<char>(~m[i]);
    EXPECT_CONTAINS(outcome(m, "data flip"), "checksum mismatch") << "data byte " << i;
  }
  EXPECT_GT(rejected, 100);
  std::printf("header mutations: %d rejected, %d still valid\n", rejected, loaded);
}

TEST(SafetensorsHostile, HugeLengthsAndNumbersGiveClearErrors) {
  const std::string good = valid_file();
  const std::string rest = good.substr(8);
  for (uint64_t len :
       {uint64_t{1} << 63, ~uint64_t{0}, uint64_t{rest.size()} + 1, uint64_t{100'000'001}, uint64_t{0xFFFFFFFF}}) {
    EXPECT_CONTAINS(outcome(le64(len) + rest, "length " + std::to_string(len)), "header length");
  }
  EXPECT_CONTAINS(outcome(le64(0) + rest, "length 0"), "bad JSON header");

  // Hostile values spliced into an otherwise valid one-tensor header.
  auto one = [](const std::string& entry, const std::string& data) {
    std::string h = R"({"t":)" + entry + "}";
    return le64(h.size()) + h + data;
  };
  struct Case {
    std::string entry, data, expect;
  };
  const std::string d8(8, '\0');
  const std::vector<Case> cases = {
      {R"({"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]})", d8, "bad JSON header"},
      {R"({"dtype":"F32","shape":[2],"data_offsets":[0,9223372036854775807]})", d8, "tensor 't'"},
      {R"({"dtype":"F32","shape":[2],"data_offsets":[9223372036854775800,9223372036854775808]})", d8, "bad JSON"},
      {R"({"dtype":"F32","shape":[9223372036854775807],"data_offsets":[0,8]})", d8, "tensor 't': shape"},
      {R"({"dtype":"F32","shape":[0,9223372036854775807,9223372036854775807],"data_offsets":[0,0]})", "",
       "tensor 't': shape"},
      {R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":[[[[[[]]]]]]})", d8, ""},
      {R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})", d8, "bad JSON header"},
      {R"({"dtype":"F32","shape":"2","data_offsets":[0,8]})", d8, "tensor 't': missing or non-array \"shape\""},
      {R"({"dtype":7,"shape":[2],"data_offsets":[0,8]})", d8, "tensor 't': missing or non-string \"dtype\""},
      {R"([])", d8, "tensor 't': expected an object"},
      {R"({"dtype":"F32","shape":[2],"data_offsets":[0,8,16]})", d8, "tensor 't': \"data_offsets\" must be"},
  };
  for (const auto& c : cases) {
    const std::string e = outcome(one(c.entry, c.data), c.entry);
    if (c.expect.empty()) {
      EXPECT_EQ(e, "") << c.entry;
    } else {
      EXPECT_CONTAINS(e, c.expect);
    }
  }

  // Duplicate names, deep nesting, an empty name, a NUL in the header.
  const std::string dup = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                          R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  EXPECT_CONTAINS(outcome(le64(dup.size()) + dup + "xy", "duplicate"), "duplicate key \"a\"");
  const std::string deep = R"({"a":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_CONTAINS(outcome(le64(deep.size()) + deep, "deep"), "nesting deeper than");
  const std::string unnamed = R"({"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  EXPECT_CONTAINS(outcome(le64(unnamed.size()) + unnamed + "x", "empty name"), "empty name");
  std::string nul = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  nul[3] = '\0';
  EXPECT_FALSE(outcome(le64(nul.size()) + nul + "x", "NUL").empty());
}

}  // namespace
}  // namespace vt::test
