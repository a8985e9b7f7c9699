// The safetensors header, parsed and validated without touching tensor data: the 8-byte length prefix and the
// JSON table {name: {dtype, shape, data_offsets}}. Depends only on core and the JSON reader, so the fuzz target
// (tools/fuzz_safetensors.cpp) can build it alone with clang's sanitizers.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"

namespace vt::io {

/// One tensor of the header: its byte range [begin, end) is relative to the start of the data section.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

/// A validated header: entries sorted by data offset (they tile the data section exactly) and `__metadata__`.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
};

/// The header length from the first 8 bytes of a file of `file_size` bytes (`file_size` ≥ 8); throws, naming
/// `path`, when the header would run past the end of the file or exceeds the 100 MB limit of the reference reader.
uint64_t safetensors_header_length(const std::string& path, const unsigned char prefix[8], uint64_t file_size);

/// Parses and validates the JSON header of a file whose data section is `data_size` bytes: well-formed JSON
/// object, no duplicate names, known dtypes, non-negative shapes whose byte size (overflow-checked) equals the
/// data_offsets range, and ranges that cover the data section exactly (no overlap, hole or trailing bytes).
/// Errors are vt::Error "[safetensors] PATH: tensor 'NAME': ...".
SafetensorsHeader parse_safetensors_header(const std::string& path, std::string_view json, uint64_t data_size);

/// "F32" etc. (the safetensors spelling) for a dtype, and back; the latter throws for names we do not support.
const char* safetensors_dtype_name(DType t);
DType dtype_from_safetensors_name(const std::string& name);

}  // namespace vt::io
