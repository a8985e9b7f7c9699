// safetensors read/write (https://github.com/huggingface/safetensors): an 8-byte little-endian header length,
// a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}} padded with spaces to a
// multiple of 8, then the tensor bytes. Files written here load in timm/safetensors and vice versa.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/safetensors_header.h"
#include "tensor/tensor.h"

namespace vt::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// What a safetensors file holds: the tensors in file (data offset) order and the `__metadata__` map.
struct SafetensorsFile {
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;
};

/// Writes `tensors` (CPU, any layout; dtypes f64 f32 bf16 i32 i64 u8) atomically: to `path + ".tmp"`, fsync,
/// rename. Data is laid out by descending dtype alignment, then name, as the reference implementation does.
/// `metadata` gets the per-tensor checksums added (io/tensor_checksums.h). Throws vt::Error on duplicate or empty
/// names, the reserved name "__metadata__" or metadata key "vitrain.crc32", or a non-CPU tensor.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a whole file: header length within the file, well-formed JSON, no duplicate names, known
/// dtypes, shapes whose byte size matches data_offsets, offsets that cover the data exactly (no overlap, hole or
/// trailing bytes); see parse_safetensors_header. A file with checksums (ours) must match them, tensor by tensor;
/// the checksum entry is not part of the returned metadata. Errors name the file and, where it applies, the tensor.
SafetensorsFile read_safetensors(const std::string& path);

/// read_safetensors for a file already in memory (`label` names it in errors), with the same checks.
SafetensorsFile read_safetensors_bytes(std::string_view bytes, const std::string& label);

/// The tensors of read_safetensors(path), in file order.
NamedTensors load_safetensors(const std::string& path);

}  // namespace vt::io
