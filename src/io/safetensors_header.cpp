// Validation of the safetensors header. Every number in it is hostile until checked: lengths against the file
// size, shapes against overflow, byte ranges against each other and the data section.
#include "io/safetensors_header.h"

#include <algorithm>

#include "core/error.h"
#include "io/json.h"

namespace vt::io {

namespace {

// The reference implementation refuses headers above 100 MB; so do we (a corrupt length must not allocate GBs).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Shapes whose element count (zeros ignored) times the item size exceeds this are rejected even when a zero
// dimension makes the tensor empty: strides are int64, and such a shape is never legitimate.
constexpr uint64_t kMaxExtent = static_cast<uint64_t>(INT64_MAX);

SafetensorsEntry parse_entry(const std::string& path, const std::string& name, const JsonValue& v) {
  auto where = [&] { return "[safetensors] " + path + ": tensor '" + name + "': "; };
  VT_CHECK(!name.empty(), "[safetensors] ", path, ": a tensor has an empty name");
  VT_CHECK(v.is_object(), where(), "expected an object, got ", v.kind_name());
  SafetensorsEntry e;
  e.name = name;
  const JsonValue* dtype = v.find("dtype");
  const JsonValue* shape = v.find("shape");
  const JsonValue* offsets = v.find("data_offsets");
  VT_CHECK(dtype && dtype->is_string(), where(), "missing or non-string \"dtype\"");
  VT_CHECK(shape && shape->is_array(), where(), "missing or non-array \"shape\"");
  VT_CHECK(offsets && offsets->is_array() && offsets->array.size() == 2, where(),
           "\"data_offsets\" must be an array of two integers");
  try {
    e.dtype = dtype_from_safetensors_name(dtype->string);
  } catch (const Error&) {
    VT_FAIL(where(), "unsupported dtype '", dtype->string, "' (supported: F64 F32 BF16 I32 I64 U8)");
  }
  for (const JsonValue& d : shape->array) {
    VT_CHECK(d.is_int() && d.integer >= 0, where(), "shape entries must be non-negative integers");
    e.shape.push_back(d.integer);
  }
  for (const JsonValue& o : offsets->array)
    VT_CHECK(o.is_int() && o.integer >= 0, where(), "data_offsets must be non-negative integers");
  e.begin = static_cast<uint64_t>(offsets->array[0].integer);
  e.end = static_cast<uint64_t>(offsets->array[1].integer);
  VT_CHECK(e.begin <= e.end, where(), "data_offsets [", e.begin, ", ", e.end, "] end before they begin");
  // numel * itemsize with overflow checks (a hostile shape must not wrap around to a small size).
  uint64_t extent = dtype_size(e.dtype);
  bool empty = false;
  for (int64_t d : e.shape) {
    if (d == 0) {
      empty = true;
      continue;
    }
    VT_CHECK(extent <= kMaxExtent / static_cast<uint64_t>(d), where(), "shape ", to_string(e.shape), " overflows");
    extent *= static_cast<uint64_t>(d);
  }
  const uint64_t bytes = empty ? 0 : extent;
  VT_CHECK(bytes == e.end - e.begin, where(), dtype->string, to_string(e.shape), " needs ", bytes,
           " bytes but data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin);
  return e;
}

}  // namespace

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::f64: return "F64";
    case DType::f32: return "F32";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::u8: return "U8";
  }
  VT_FAIL("[safetensors] unknown dtype");
}

DType dtype_from_safetensors_name(const std::string& name) {
  for (DType t : {DType::f64, DType::f32, DType::bf16, DType::i32, DType::i64, DType::u8})
    if (name == safetensors_dtype_name(t)) return t;
  VT_FAIL("[safetensors] unsupported dtype '", name, "'");
}

uint64_t safetensors_header_length(const std::string& path, const unsigned char prefix[8], uint64_t file_size) {
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | prefix[i];
  VT_CHECK(file_size >= 8 && header_len <= file_size - 8, "[safetensors] ", path, ": header length ", header_len,
           " runs past the end of the file (", file_size, " bytes; truncated or not a safetensors file?)");
  VT_CHECK(header_len <= kMaxHeaderBytes, "[safetensors] ", path, ": header length ", header_len, " exceeds the ",
           kMaxHeaderBytes, "-byte limit");
  return header_len;
}

SafetensorsHeader parse_safetensors_header(const std::string& path, std::string_view json, uint64_t data_size) {
  JsonValue root;
  try {
    root = parse_json(json);  // rejects duplicate keys, so two tensors cannot share a name
  } catch (const Error& e) {
    VT_FAIL("[safetensors] ", path, ": bad JSON header: ", e.what());
  }
  VT_CHECK(root.is_object(), "[safetensors] ", path, ": header must be a JSON object, got ", root.kind_name());

  SafetensorsHeader out;
  for (const auto& [name, v] : root.object) {
    if (name == "__metadata__") {
      VT_CHECK(v.is_object(), "[safetensors] ", path, ": __metadata__ must be an object of strings");
      for (const auto& [k, s] : v.object) {
        VT_CHECK(s.is_string(), "[safetensors] ", path, ": __metadata__['", k, "'] must be a string, got ",
                 s.kind_name());
        out.metadata[k] = s.string;
      }
      continue;
    }
    out.entries.push_back(parse_entry(path, name, v));
  }

  // The data section must be covered exactly: sorted by offset, each tensor starts where the previous ended.
  auto& entries = out.entries;
  std::stable_sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const SafetensorsEntry& e : entries) {
    VT_CHECK(e.begin >= pos, "[safetensors] ", path, ": tensor '", e.name, "' data [", e.begin, ", ", e.end,
             ") overlaps tensor '", prev ? prev->name : "", "' which ends at ", pos);
    VT_CHECK(e.begin == pos, "[safetensors] ", path, ": hole of ", e.begin - pos, " bytes before tensor '", e.name,
             "' (data_offsets start at ", e.begin, ", expected ", pos, ")");
    VT_CHECK(e.end <= data_size, "[safetensors] ", path, ": tensor '", e.name, "' data [", e.begin, ", ", e.end,
             ") runs past the end of the data section (", data_size, " bytes; truncated file?)");
    pos = e.end;
    prev = &e;
  }
  VT_CHECK(pos == data_size, "[safetensors] ", path, ": ", data_size - pos,
           " trailing bytes after the last tensor are not covered by the header");
  return out;
}

}  // namespace vt::io
