// Fuzz target for the PyTorch checkpoint reader (src/io/zip_archive, torch_pickle, torch_state_dict): any byte
// string must either give tensor records whose every element lies inside the input, or fail with a vt::Error
// naming the file; never crash, hang, leak or read out of bounds. Two builds, as fuzz_safetensors:
//   - scripts/fuzz.sh ... torch compiles it with clang -fsanitize=fuzzer,address,undefined -DVT_LIBFUZZER
//     (no Tensor library: the zip, the unpickler and the element copy are all instrumented). The zip's CRC-32
//     check is off there, so mutations reach the pickle instead of failing the checksum;
//   - the normal CMake build makes `fuzz_torch_checkpoint FILE...`, which replays inputs through the whole
//     reader, read_torch_checkpoint_bytes with the CRC check included.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/torch_state_dict.h"
#ifndef VT_LIBFUZZER
#include "io/torch_checkpoint.h"
#endif

namespace {

const std::string kLabel = "fuzz-input";

void expect_clear_error(const vt::Error& e) {
  if (std::strncmp(e.what(), "[torch] fuzz-input", 18) != 0) {
    std::fprintf(stderr, "unexpected error message: %s\n", e.what());
    __builtin_trap();
  }
}

void check_records(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (vt::io::TorchPick pick : {vt::io::TorchPick::weights, vt::io::TorchPick::ema}) {
    try {
      const auto records = vt::io::parse_torch_checkpoint(bytes, kLabel, pick, /*verify_crc=*/false);
      std::vector<unsigned char> out;
      for (const auto& r : records.tensors) {
        if (r.storage.data() < bytes.data() || r.storage.data() + r.storage.size() > bytes.data() + size)
          __builtin_trap();                          // a storage outside the input
        if (r.numel > (int64_t{1} << 20)) continue;  // valid but large (a repeated storage): skip the copy
        // Copy every element the reader would copy: one outside its storage is an ASan report.
        out.assign(static_cast<size_t>(r.numel) * vt::dtype_size(vt::io::torch_read_dtype(r.dtype)), 0);
        vt::io::copy_torch_elements(r, out.data());
      }
    } catch (const vt::Error& e) {
      expect_clear_error(e);
    }
  }
}

}  // namespace

#ifdef VT_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_records(data, size);
  return 0;
}
#else
int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE...  (replays fuzzer inputs through the PyTorch checkpoint reader)\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    check_records(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    try {
      const auto c = vt::io::read_torch_checkpoint_bytes(bytes, kLabel);
      std::printf("%s: valid, %zu tensors\n", argv[i], c.tensors.size());
    } catch (const vt::Error& e) {
      expect_clear_error(e);
      std::printf("%s: rejected: %s\n", argv[i], e.what());
    }
  }
  return 0;
}
#endif
