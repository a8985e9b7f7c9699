// safetensors writer and validating reader. The reader streams each tensor straight into its own buffer, so a
// checkpoint is never held twice in memory.
#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <set>

#include "io/atomic_file.h"
#include "io/json.h"

namespace vt::io {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

// The reference implementation refuses headers above 100 MB; so do we (a corrupt length must not allocate GBs).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct Entry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string shape_str(const Shape& s) { return vt::to_string(s); }

Entry parse_entry(const std::string& path, const std::string& name, const JsonValue& v) {
  auto where = [&] { return "[safetensors] " + path + ": tensor '" + name + "': "; };
  VT_CHECK(v.is_object(), where(), "expected an object, got ", v.kind_name());
  Entry e;
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
  uint64_t bytes = dtype_size(e.dtype);
  for (int64_t d : e.shape) {
    VT_CHECK(d == 0 || bytes <= UINT64_MAX / static_cast<uint64_t>(d), where(), "shape ", shape_str(e.shape),
             " overflows");
    bytes *= static_cast<uint64_t>(d);
  }
  VT_CHECK(bytes == e.end - e.begin, where(), dtype->string, shape_str(e.shape), " needs ", bytes,
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

  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    size_t sa = dtype_size(data[a].dtype()), sb = dtype_size(data[b].dtype());
    if (sa != sb) return sa > sb;
    return tensors[a].first < tensors[b].first;
  });

  JsonValue header = JsonValue::make_object();
  if (!metadata.empty()) {
    JsonValue meta = JsonValue::make_object();
    for (const auto& [k, v] : metadata) meta.object.emplace_back(k, JsonValue::make_string(v));
    header.object.emplace_back("__metadata__", std::move(meta));
  }
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
  uint64_t header_len = read_u64_le(len);
  VT_CHECK(header_len <= file_size - 8, "[safetensors] ", path, ": header length ", header_len,
           " runs past the end of the file (", file_size, " bytes; truncated or not a safetensors file?)");
  VT_CHECK(header_len <= kMaxHeaderBytes, "[safetensors] ", path, ": header length ", header_len,
           " exceeds the ", kMaxHeaderBytes, "-byte limit");
  std::string text(header_len, '\0');
  f.read(text.data(), static_cast<std::streamsize>(header_len));
  VT_CHECK(f, "[safetensors] ", path, ": cannot read the ", header_len, "-byte header");

  JsonValue root;
  try {
    root = parse_json(text);
  } catch (const Error& e) {
    VT_FAIL("[safetensors] ", path, ": bad JSON header: ", e.what());
  }
  VT_CHECK(root.is_object(), "[safetensors] ", path, ": header must be a JSON object, got ", root.kind_name());

  SafetensorsFile out;
  std::vector<Entry> entries;
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
    entries.push_back(parse_entry(path, name, v));
  }

  // The data section must be covered exactly: sorted by offset, each tensor starts where the previous ended.
  const uint64_t data_size = file_size - 8 - header_len;
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
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

  out.tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) {
      f.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(e.end - e.begin));
      VT_CHECK(f, "[safetensors] ", path, ": cannot read the data of tensor '", e.name, "'");
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

NamedTensors load_safetensors(const std::string& path) { return read_safetensors(path).tensors; }

}  // namespace vt::io
