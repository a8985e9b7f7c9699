// safetensors writer and validating reader. The reader streams each tensor straight into its own buffer, so a
// checkpoint is never held twice in memory, and checks each against the writer's checksum (io/tensor_checksums.h).
#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "io/atomic_file.h"
#include "io/json.h"
#include "io/safetensors_header.h"
#include "io/tensor_checksums.h"

namespace vt::io {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  std::vector<Tensor> data;
  data.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    VT_CHECK(!name.empty(), "[safetensors] ", path, ": empty tensor name");
    VT_CHECK(name != "__metadata__", "[safetensors] ", path, ": '__metadata__' is reserved, not a tensor name");
    VT_CHECK(names.insert(name).second, "[safetensors] ", path, ": duplicate tensor name '", name, "'");
    VT_CHECK(t.defined(), "[safetensors] ", path, ": tensor '", name, "' is undefined");
    VT_CHECK(t.device().is_cpu(), "[safetensors] ", path, ": tensor '", name, "' is on ", t.device().str(),
             "; copy it to the CPU first");
    data.push_back(t.detach().contiguous());
  }
  VT_CHECK(!metadata.count(kChecksumKey), "[safetensors] ", path, ": __metadata__ key '", kChecksumKey,
           "' is reserved for the checksums the writer adds");

  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    size_t sa = dtype_size(data[a].dtype()), sb = dtype_size(data[b].dtype());
    if (sa != sb) return sa > sb;
    return tensors[a].first < tensors[b].first;
  });

  std::vector<std::pair<std::string, uint32_t>> checksums;
  for (size_t i : order)
    checksums.emplace_back(tensors[i].first, tensor_checksum(data[i].dtype(), data[i].shape(), data[i].raw_data(),
                                                             data[i].numel() * dtype_size(data[i].dtype())));
  std::map<std::string, std::string> all_metadata = metadata;
  all_metadata[kChecksumKey] = encode_checksums(checksums, metadata_checksum(metadata));

  JsonValue header = JsonValue::make_object();
  JsonValue meta = JsonValue::make_object();
  for (const auto& [k, v] : all_metadata) meta.object.emplace_back(k, JsonValue::make_string(v));
  header.object.emplace_back("__metadata__", std::move(meta));
  int64_t offset = 0;
  for (size_t i : order) {
    const Tensor& t = data[i];
    JsonValue shape = JsonValue::make_array();
    for (int64_t d : t.shape()) shape.array.push_back(JsonValue::make_int(d));
    int64_t nbytes = t.numel() * static_cast<int64_t>(dtype_size(t.dtype()));
    header.object.emplace_back(
        tensors[i].first,
        JsonValue::make_object({{"dtype", JsonValue::make_string(safetensors_dtype_name(t.dtype()))},
                                {"shape", std::move(shape)},
                                {"data_offsets", JsonValue::make_array({JsonValue::make_int(offset),
                                                                        JsonValue::make_int(offset + nbytes)})}}));
    offset += nbytes;
  }
  std::string text = to_json(header);
  text.append((8 - text.size() % 8) % 8, ' ');

  AtomicFile out(path);
  unsigned char len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  out.write(len, 8);
  out.write(text);
  for (size_t i : order)
    if (data[i].numel() > 0) out.write(data[i].raw_data(), data[i].numel() * dtype_size(data[i].dtype()));
  out.commit();
}

namespace {

std::vector<std::string> names_of(const SafetensorsHeader& header) {
  std::vector<std::string> names;
  for (const SafetensorsEntry& e : header.entries) names.push_back(e.name);
  return names;
}

// The checksum table of the file, taken out of its metadata and matched against the header's names.
std::optional<ChecksumTable> take_checksums(const std::string& path, SafetensorsHeader& header) {
  ChecksumTable table;
  if (!table.take(path, header.metadata)) return std::nullopt;
  table.expect_names(path, names_of(header));
  return table;
}

void verify_tensor(const std::optional<ChecksumTable>& table, const std::string& path, const SafetensorsEntry& e,
                   const Tensor& t) {
  if (table) table->verify(path, e.name, tensor_checksum(e.dtype, e.shape, t.raw_data(), e.end - e.begin));
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path) {
  std::error_code ec;
  uint64_t file_size = std::filesystem::file_size(path, ec);
  VT_CHECK(!ec, "[safetensors] cannot open '", path, "': ", ec.message());
  std::ifstream f(path, std::ios::binary);
  VT_CHECK(f, "[safetensors] cannot open '", path, "'");
  VT_CHECK(file_size >= 8, "[safetensors] ", path, ": file is ", file_size,
           " bytes, too short for the 8-byte header length (truncated?)");

  unsigned char len[8];
  f.read(reinterpret_cast<char*>(len), 8);
  VT_CHECK(f, "[safetensors] ", path, ": cannot read the header length");
  const uint64_t header_len = safetensors_header_length(path, len, file_size);
  std::string text(header_len, '\0');
  f.read(text.data(), static_cast<std::streamsize>(header_len));
  VT_CHECK(f, "[safetensors] ", path, ": cannot read the ", header_len, "-byte header");
  SafetensorsHeader header = parse_safetensors_header(path, text, file_size - 8 - header_len);
  const std::optional<ChecksumTable> checksums = take_checksums(path, header);

  SafetensorsFile out;
  out.metadata = std::move(header.metadata);
  out.tensors.reserve(header.entries.size());
  for (const SafetensorsEntry& e : header.entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) {
      f.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(e.end - e.begin));
      VT_CHECK(f, "[safetensors] ", path, ": cannot read the data of tensor '", e.name, "' (file changed?)");
    }
    verify_tensor(checksums, path, e, t);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

SafetensorsFile read_safetensors_bytes(std::string_view bytes, const std::string& label) {
  VT_CHECK(bytes.size() >= 8, "[safetensors] ", label, ": file is ", bytes.size(),
           " bytes, too short for the 8-byte header length (truncated?)");
  const auto* base = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t header_len = safetensors_header_length(label, base, bytes.size());
  SafetensorsHeader header =
      parse_safetensors_header(label, bytes.substr(8, header_len), bytes.size() - 8 - header_len);
  const std::optional<ChecksumTable> checksums = take_checksums(label, header);
  const unsigned char* data = base + 8 + header_len;
  SafetensorsFile out;
  out.metadata = std::move(header.metadata);
  out.tensors.reserve(header.entries.size());
  for (const SafetensorsEntry& e : header.entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.raw_data(), data + e.begin, e.end - e.begin);
    verify_tensor(checksums, label, e, t);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

NamedTensors load_safetensors(const std::string& path) { return read_safetensors(path).tensors; }

}  // namespace vt::io
