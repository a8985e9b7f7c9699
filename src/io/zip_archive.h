// The zip container of torch.save's format: entries STORED (no compression), each entry's data aligned to 64
// bytes, zip64 records where sizes or offsets need them. A bounds-checked reader over bytes in memory and a
// streaming writer; compressed or encrypted entries are refused, not inflated.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vt::io {

class AtomicFile;

struct ZipEntry {
  std::string name;
  std::string_view data;  // points into the bytes given to read_stored_zip
  uint32_t crc32 = 0;     // as recorded in the central directory
};

/// Parses the central directory of `bytes` (end-of-central-directory record, zip64 when present), checks every
/// entry's local header and that its data lies inside the file, and returns the entries in directory order.
/// With `verify_crc`, each entry's CRC-32 is checked too. Errors: vt::Error "[<tag>] <label>: ...".
std::vector<ZipEntry> read_stored_zip(std::string_view bytes, const std::string& label, const std::string& tag,
                                      bool verify_crc = true);

/// CRC-32 (zip's, zlib's) of `n` bytes.
uint32_t zip_crc32(const void* data, size_t n);

/// Writes stored entries one after another into `out`, then the central directory in finish(). Each entry's
/// data starts on a 64-byte boundary (torch's layout, so torch can map tensors in place). Zip64 records are used
/// when a size or offset needs them, or always with `force_zip64` (tests).
class StoredZipWriter {
 public:
  explicit StoredZipWriter(AtomicFile& out, bool force_zip64 = false) : out_(out), force_zip64_(force_zip64) {}
  /// One entry whose data is the concatenation of `parts` (pointer, size).
  void add(const std::string& name, const std::vector<std::pair<const void*, size_t>>& parts);
  void add(const std::string& name, std::string_view data) { add(name, {{data.data(), data.size()}}); }
  /// Writes the central directory and end records. Call once, after the last add().
  void finish();

 private:
  struct Written {
    std::string name;
    uint64_t offset, size;
    uint32_t crc;
  };
  void put(const std::string& bytes);
  AtomicFile& out_;
  bool force_zip64_;
  uint64_t pos_ = 0;
  std::vector<Written> entries_;
};

}  // namespace vt::io
