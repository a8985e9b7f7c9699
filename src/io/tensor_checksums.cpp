#include "io/tensor_checksums.h"

#include <zlib.h>

#include <cstdio>
#include <optional>

#include "core/error.h"
#include "io/json.h"
#include "io/safetensors_header.h"

namespace vt::io {

namespace {

std::string hex8(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

bool parse_hex8(const std::string& s, uint32_t& out) {
  if (s.size() != 8) return false;
  uint32_t v = 0;
  for (char c : s) {
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = (v << 4) | static_cast<uint32_t>(d);
  }
  out = v;
  return true;
}

bool one_byte_apart(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  return differ == 1;
}

uint32_t crc_update(uint32_t crc, const void* data, size_t n) {
  return static_cast<uint32_t>(::crc32_z(crc, static_cast<const Bytef*>(data), n));
}

}  // namespace

uint32_t tensor_checksum(DType dtype, const Shape& shape, const void* data, size_t nbytes) {
  std::string desc = safetensors_dtype_name(dtype);
  desc += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) desc += ',';
    desc += std::to_string(shape[i]);
  }
  desc += ']';
  uint32_t crc = crc_update(0, desc.data(), desc.size());
  return nbytes ? crc_update(crc, data, nbytes) : crc;
}

uint32_t metadata_checksum(const std::map<std::string, std::string>& metadata) {
  uint32_t crc = 0;
  for (const auto& [key, value] : metadata)
    for (const std::string* s : {&key, &value}) {
      const std::string length = std::to_string(s->size()) + ':';
      crc = crc_update(crc, length.data(), length.size());
      crc = crc_update(crc, s->data(), s->size());
    }
  return crc;
}

std::string encode_checksums(const std::vector<std::pair<std::string, uint32_t>>& checksums, uint32_t metadata_crc) {
  JsonValue table = JsonValue::make_object();
  table.object.emplace_back(kMetadataChecksumEntry, JsonValue::make_string(hex8(metadata_crc)));
  for (const auto& [name, crc] : checksums) table.object.emplace_back(name, JsonValue::make_string(hex8(crc)));
  return to_json(table);
}

bool ChecksumTable::take(const std::string& path, std::map<std::string, std::string>& metadata) {
  stored_.clear();
  auto it = metadata.find(kChecksumKey);
  if (it == metadata.end()) {
    for (const auto& [key, value] : metadata)
      VT_CHECK(!one_byte_apart(key, kChecksumKey), "[safetensors] ", path, ": __metadata__ key '", key,
               "' is one byte off '", kChecksumKey, "': the header is damaged");
    return false;
  }
  JsonValue table;
  try {
    table = parse_json(it->second);
  } catch (const Error& e) {
    VT_FAIL("[safetensors] ", path, ": __metadata__['", kChecksumKey, "'] is damaged: ", e.what());
  }
  VT_CHECK(table.is_object(), "[safetensors] ", path, ": __metadata__['", kChecksumKey,
           "'] must be a JSON object of checksums, got ", table.kind_name());
  std::optional<uint32_t> metadata_crc;
  for (const auto& [name, v] : table.object) {
    uint32_t crc = 0;
    VT_CHECK(v.is_string() && parse_hex8(v.string, crc), "[safetensors] ", path, ": tensor '", name,
             "': checksum in __metadata__['", kChecksumKey, "'] is not 8 hex digits (damaged header)");
    if (name == kMetadataChecksumEntry) metadata_crc = crc;
    else stored_[name] = crc;
  }
  metadata.erase(it);
  if (metadata_crc) {
    const uint32_t computed = metadata_checksum(metadata);
    VT_CHECK(computed == *metadata_crc, "[safetensors] ", path, ": __metadata__ checksum mismatch (stored ",
             hex8(*metadata_crc), ", computed ", hex8(computed), "): a key or value of its ", metadata.size(),
             " entries (a checkpoint's position, state or config) is damaged");
  }
  return true;
}

void ChecksumTable::expect_names(const std::string& path, const std::vector<std::string>& names) const {
  std::set<std::string> have(names.begin(), names.end());
  for (const std::string& name : names)
    VT_CHECK(stored_.count(name), "[safetensors] ", path, ": tensor '", name, "' has no checksum in __metadata__['",
             kChecksumKey, "'] (a damaged header renamed it?)");
  for (const auto& [name, crc] : stored_)
    VT_CHECK(have.count(name), "[safetensors] ", path, ": tensor '", name, "' is missing: __metadata__['", kChecksumKey,
             "'] lists it but the header has no such tensor (a damaged header renamed it?)");
}

void ChecksumTable::verify(const std::string& path, const std::string& name, uint32_t computed) const {
  const uint32_t stored = stored_.at(name);
  VT_CHECK(stored == computed, "[safetensors] ", path, ": tensor '", name, "': checksum mismatch (stored ",
           hex8(stored), ", computed ", hex8(computed), "): its data, dtype or shape is damaged");
}

}  // namespace vt::io
