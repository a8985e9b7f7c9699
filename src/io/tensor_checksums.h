// Per-tensor checksums in a safetensors file's __metadata__, so a damaged data or header byte is found when the
// file is read instead of loading silently. Every file save_safetensors writes (weights, best/last/recovery
// checkpoints, convert's output) carries the metadata entry
//   "vitrain.crc32": {"<tensor name>":"<8 lowercase hex digits>", ...}   (compact JSON, one entry per tensor)
// where each value is zlib's CRC-32 (the zip/PNG polynomial) over the tensor's dtype and shape as safetensors
// spells them, e.g. "F32[192,3]" ("[]" for a 0-dim tensor), followed by its data bytes. Covering dtype and shape
// as well as the data, and one entry per name, means a flipped header byte that renames a tensor or changes its
// shape is caught too. The entry "__metadata__" (never a tensor name) is the CRC-32 of the other metadata entries
// (metadata_checksum), so a damaged value such as a checkpoint's update count or its resolved config is caught as
// well; files written before it existed have no such entry and their metadata is not checked. It is metadata
// only: other safetensors readers ignore it. Files without the table (timm's, Hugging Face's, hand-written ones)
// load unchecked, as before.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"

namespace vt::io {

inline constexpr const char* kChecksumKey = "vitrain.crc32";
/// The table's entry for the metadata itself.
inline constexpr const char* kMetadataChecksumEntry = "__metadata__";

/// The checksum of one tensor: CRC-32 of "<DTYPE><shape>" then `nbytes` of data.
uint32_t tensor_checksum(DType dtype, const Shape& shape, const void* data, size_t nbytes);

/// CRC-32 of every (key, value) of `metadata` in key order, each string preceded by its length.
uint32_t metadata_checksum(const std::map<std::string, std::string>& metadata);

/// The metadata value for (name, checksum) pairs and the checksum of the rest of the metadata.
std::string encode_checksums(const std::vector<std::pair<std::string, uint32_t>>& checksums, uint32_t metadata_crc);

/// The checksums a file declares, checked tensor by tensor while it is read. Errors are vt::Error
/// "[safetensors] PATH: ..." naming the tensor where there is one.
class ChecksumTable {
 public:
  /// Takes the checksum entry out of `metadata` (callers never see it) and checks the rest of the metadata against
  /// the table's "__metadata__" entry when it has one. Returns false when the file has no table (a file made
  /// elsewhere); throws when the table is malformed, when the metadata does not match it, or when a metadata key
  /// differs from the table's key in one byte (a damaged key must not turn the check off).
  bool take(const std::string& path, std::map<std::string, std::string>& metadata);
  /// The header's tensor names must be exactly the table's.
  void expect_names(const std::string& path, const std::vector<std::string>& names) const;
  /// Throws unless `name`'s stored checksum equals `computed`.
  void verify(const std::string& path, const std::string& name, uint32_t computed) const;

 private:
  std::map<std::string, uint32_t> stored_;
};

}  // namespace vt::io
