// Fuzz target for the safetensors reader's validation (src/io/safetensors_header): any byte string must either
// parse into byte ranges that lie inside the input, or fail with a vt::Error naming the file; never crash, hang
// or read out of bounds. Two builds:
//   - scripts/fuzz.sh compiles it with clang -fsanitize=fuzzer,address,undefined -DVT_LIBFUZZER (header
//     validation only, so everything the hostile bytes touch is instrumented);
//   - the normal CMake build makes `fuzz_safetensors FILE...`, which replays inputs (a crash the fuzzer found)
//     through the whole reader, read_safetensors_bytes included.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors_header.h"
#ifndef VT_LIBFUZZER
#include "io/safetensors.h"
#endif

namespace {

const std::string kLabel = "fuzz-input";

// Errors must come from the validation and name the input; anything else is a bug the fuzzer should report.
void expect_clear_error(const vt::Error& e) {
  if (std::strncmp(e.what(), "[safetensors] fuzz-input", 24) != 0) {
    std::fprintf(stderr, "unexpected error message: %s\n", e.what());
    __builtin_trap();
  }
}

void check_header(const uint8_t* data, size_t size) {
  if (size < 8) return;  // the reader rejects these before looking at the bytes
  try {
    const uint64_t header_len = vt::io::safetensors_header_length(kLabel, data, size);
    const std::string_view json(reinterpret_cast<const char*>(data) + 8, header_len);
    const vt::io::SafetensorsHeader h = vt::io::parse_safetensors_header(kLabel, json, size - 8 - header_len);
    // Copy every range the reader would copy: a range outside the input is an ASan report.
    const uint8_t* base = data + 8 + header_len;
    uint64_t covered = 0;
    std::vector<uint8_t> buf;
    for (const auto& e : h.entries) {
      buf.assign(base + e.begin, base + e.end);
      covered += e.end - e.begin;
    }
    if (covered != size - 8 - header_len) __builtin_trap();  // validation promised an exact tiling
  } catch (const vt::Error& e) {
    expect_clear_error(e);
  }
}

}  // namespace

#ifdef VT_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_header(data, size);
  return 0;
}
#else
int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE...  (replays fuzzer inputs through the safetensors reader)\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    check_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    try {
      const auto file = vt::io::read_safetensors_bytes(bytes, kLabel);
      std::printf("%s: valid, %zu tensors\n", argv[i], file.tensors.size());
    } catch (const vt::Error& e) {
      expect_clear_error(e);
      std::printf("%s: rejected: %s\n", argv[i], e.what());
    }
  }
  return 0;
}
#endif
