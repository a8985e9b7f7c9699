// From checkpoint bytes to validated tensor records: container, unpickle, state-dict choice, bounds.
#include "io/torch_state_dict.h"

#include <cstring>
#include <map>
#include <set>

#include "core/error.h"
#include "io/zip_archive.h"

namespace vt::io {
namespace {

using K = PyValue::Kind;

// torch's legacy magic number 0x1950a86a20f9469cfc6c, as pickle protocol 2 writes it (LONG1, 10 bytes).
constexpr char kLegacyMagic[] = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
constexpr size_t kLegacyMagicSize = sizeof kLegacyMagic - 1;
constexpr int kMaxDims = 32;
constexpr int64_t kMaxRepeatedElements = int64_t{1} << 26;  // for tensors that repeat storage (zero strides)

// A pickled storage: the persistent id's fields, its data found once the whole pickle is read.
PyValue* storage_from_pid(const PyValue& pid, Unpickled& arena, const std::string& where, bool legacy) {
  const auto& f = pid.items;
  VT_CHECK(pid.kind == K::tuple && f.size() >= 5 && f[0]->kind == K::string && f[0]->s == "storage", "[torch] ", where,
           ": a persistent id that is not a storage: ", pid.describe());
  VT_CHECK(f[1]->kind == K::global, "[torch] ", where, ": storage type is ", f[1]->describe());
  const auto dtype = torch_storage_dtype(f[1]->s, f[1]->name);
  VT_CHECK(dtype.has_value(), "[torch] ", where, ": storage type ", f[1]->global_name(), " is not supported");
  VT_CHECK(f[2]->kind == K::string && f[3]->kind == K::string && f[4]->kind == K::integer && f[4]->i >= 0, "[torch] ",
           where, ": malformed storage persistent id (key, location, size)");
  arena.arena.emplace_back();
  PyValue* s = &arena.arena.back();
  s->kind = K::storage;
  s->dtype = *dtype;
  s->s = f[2]->s;
  s->name = f[3]->s;
  s->i = f[4]->i;
  if (legacy && f.size() >= 6 && f[5]->kind != K::none) {  // a view (view_key, offset, size) of the root storage
    const auto& v = f[5]->items;
    VT_CHECK(f[5]->kind == K::tuple && v.size() == 3 && v[0]->kind == K::string && v[1]->kind == K::integer &&
                 v[2]->kind == K::integer && v[1]->i >= 0 && v[2]->i >= 0 && v[1]->i <= s->i &&
                 v[2]->i <= s->i - v[1]->i,
             "[torch] ", where, ": malformed storage view of '", s->s, "'");
    arena.arena.emplace_back(*s);
    PyValue* view = &arena.arena.back();
    view->view_of = s;
    view->view_offset = v[1]->i;
    view->i = v[2]->i;
    return view;
  }
  return s;
}

std::string key_text(const PyValue* k) {
  if (k->kind == K::string) return k->s;
  if (k->kind == K::integer) return std::to_string(k->i);
  return "<" + k->describe() + ">";
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

const PyValue* entry(const PyValue& dict, const char* key) {
  const auto it = dict.string_keys.find(key);
  return it == dict.string_keys.end() ? nullptr : dict.entries[it->second].second;
}

// Chooses the state dict; records names and tensors (storages still unresolved).
struct Chosen {
  std::vector<std::pair<std::string, const PyValue*>> tensors;
  std::string source_key;
  std::vector<std::string> other_keys;
};

Chosen choose_state_dict(const PyValue& root, const std::string& label, TorchPick pick) {
  VT_CHECK(root.kind == K::dict, "[torch] ", label, ": the checkpoint holds ", root.describe(),
           ", not a state dict (a dict of tensors)");
  std::vector<std::string> top;
  for (const auto& [k, v] : root.entries) top.push_back(key_text(k));
  static const char* const kWeights[] = {"model", "state_dict"};
  static const char* const kEma[] = {"model_ema", "state_dict_ema"};
  bool wrapper = false;
  for (const char* k : {"model", "state_dict", "model_ema", "state_dict_ema"}) {
    const PyValue* v = entry(root, k);
    wrapper = wrapper || (v && v->kind != K::tensor);
  }
  VT_CHECK(wrapper || pick != TorchPick::ema, "[torch] ", label,
           ": no EMA weights ('model_ema' or 'state_dict_ema'): the file is a bare state dict");
  Chosen out;
  const PyValue* dict = &root;
  if (wrapper) {
    for (const char* k : pick == TorchPick::ema ? kEma : kWeights) {
      if (entry(root, k)) {
        out.source_key = k;
        dict = entry(root, k);
        break;
      }
    }
    VT_CHECK(!out.source_key.empty(), "[torch] ", label, ": no ",
             pick == TorchPick::ema ? "EMA weights ('model_ema' or 'state_dict_ema')"
                                    : "model weights ('model' or 'state_dict')",
             " in this checkpoint; its top-level keys are: ", joined(top));
    for (const auto& k : top)
      if (k != out.source_key) out.other_keys.push_back(k);
    VT_CHECK(dict->kind == K::dict, "[torch] ", label, ": '", out.source_key, "' holds ", dict->describe(),
             ", not a state dict",
             dict->kind == K::object ? " (a pickled module: save module.state_dict() instead)" : "");
  }
  for (const auto& [k, v] : dict->entries) {
    if (!wrapper && v->kind != K::tensor) {  // a bare dict's non-tensor entries are left out, like a wrapper's
      out.other_keys.push_back(key_text(k));
      continue;
    }
    const std::string in = out.source_key.empty() ? "the state dict" : "'" + out.source_key + "'";
    VT_CHECK(k->kind == K::string, "[torch] ", label, ": ", in, " has a key that is ", k->describe(), ", not a string");
    VT_CHECK(v->kind == K::tensor, "[torch] ", label, ": entry '", k->s, "' of ", in, " is ", v->describe(),
             ", not a tensor");
    out.tensors.emplace_back(k->s, v);
  }
  VT_CHECK(
      wrapper || !out.tensors.empty(), "[torch] ", label,
      ": no tensors, and none of 'model', 'state_dict', 'model_ema', 'state_dict_ema'; top-level keys: ", joined(top));
  return out;
}

// Validates a tensor against its storage's bytes and fills the record.
TorchTensorRecord make_record(const std::string& name, const PyValue& t, std::string_view storage,
                              const std::string& label) {
  const PyValue& s = *t.items[0];
  TorchTensorRecord r;
  r.name = name;
  r.dtype = s.dtype;
  r.shape = t.shape;
  r.strides = t.strides;
  r.offset = t.i;
  r.storage = storage;
  const std::string what = "[torch] " + label + ": tensor '" + name + "'";
  VT_CHECK(r.shape.size() <= kMaxDims, what, " has ", r.shape.size(), " dimensions");
  VT_CHECK(r.offset >= 0, what, ": negative storage offset ", r.offset);
  int64_t numel = 1, last = r.offset;
  for (size_t d = 0; d < r.shape.size(); ++d) {
    VT_CHECK(r.shape[d] >= 0 && r.strides[d] >= 0, what, ": negative size or stride in dimension ", d);
    VT_CHECK(r.shape[d] == 0 || numel <= (int64_t{1} << 48) / r.shape[d], what, ": too many elements");
    numel *= r.shape[d];
  }
  if (numel > 0) {
    for (size_t d = 0; d < r.shape.size(); ++d) {
      VT_CHECK(r.strides[d] == 0 || r.shape[d] - 1 <= ((int64_t{1} << 60) - last) / r.strides[d], what, ": its stride ",
               r.strides[d], " reaches past any storage");
      last += (r.shape[d] - 1) * r.strides[d];
    }
    VT_CHECK(last < s.i, what, " (size ", to_string(r.shape), ", stride ", to_string(r.strides), ", offset ", r.offset,
             ") reads element ", last, " of a ", s.i, "-element storage");
    VT_CHECK(numel <= s.i || numel <= kMaxRepeatedElements, what, " repeats its ", s.i, "-element storage into ", numel,
             " elements (zero strides); more than vitrain expands");
  }
  r.numel = numel;
  return r;
}

// Element count * size = bytes, for a storage whose data entry is `bytes` long.
void check_storage_size(const PyValue& s, uint64_t bytes, const std::string& label, const std::string& entry_name) {
  const uint64_t elsize = torch_dtype_size(s.dtype);
  VT_CHECK(static_cast<uint64_t>(s.i) <= bytes / elsize && static_cast<uint64_t>(s.i) * elsize == bytes, "[torch] ",
           label, ": storage '", s.s, "' should hold ", s.i, " ", torch_dtype_name(s.dtype), " elements (",
           static_cast<uint64_t>(s.i) * elsize, " bytes) but ", entry_name, " has ", bytes, " bytes");
}

TorchStateDictRecords read_zip(std::string_view bytes, const std::string& label, TorchPick pick, bool verify_crc) {
  const std::vector<ZipEntry> zip = read_stored_zip(bytes, label, "torch", verify_crc);
  std::map<std::string, std::string_view> files;
  std::string prefix;
  for (const ZipEntry& e : zip) {
    files.emplace(e.name, e.data);
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      VT_CHECK(prefix.empty(), "[torch] ", label, ": two pickles ('", prefix, "data.pkl' and '", e.name,
               "'); not a single torch.save archive");
      prefix = e.name.substr(0, slash + 1);
    }
  }
  VT_CHECK(!prefix.empty(), "[torch] ", label,
           ": a zip file without <folder>/data.pkl, so not a torch.save checkpoint (a TorchScript archive or "
           "another zip?)");
  if (const auto bo = files.find(prefix + "byteorder"); bo != files.end())
    VT_CHECK(bo->second == "little", "[torch] ", label, ": written with byteorder '",
             std::string(bo->second.substr(0, 16)), "'; only little-endian checkpoints are supported");

  const std::string where = label + ": " + prefix + "data.pkl";
  Unpickled u;
  const PersistentLoad load = [&](PyValue& pid, Unpickled& arena) {
    return storage_from_pid(pid, arena, where, false);
  };
  const std::string_view pkl = files.at(prefix + "data.pkl");
  unpickle(pkl, 0, where, load, u);
  VT_CHECK(u.end == pkl.size(), "[torch] ", where, ": ", pkl.size() - u.end, " bytes after the pickle's STOP");

  Chosen chosen = choose_state_dict(*u.root, label, pick);
  TorchStateDictRecords out;
  out.source_key = std::move(chosen.source_key);
  out.other_keys = std::move(chosen.other_keys);
  for (const auto& [name, t] : chosen.tensors) {
    const PyValue& s = *t->items[0];
    const std::string entry_name = prefix + "data/" + s.s;
    const auto it = files.find(entry_name);
    VT_CHECK(it != files.end(), "[torch] ", label, ": tensor '", name, "' uses storage '", s.s,
             "', but the archive has no entry '", entry_name, "'");
    check_storage_size(s, it->second.size(), label, "'" + entry_name + "'");
    out.tensors.push_back(make_record(name, *t, it->second, label));
  }
  return out;
}

TorchStateDictRecords read_legacy(std::string_view bytes, const std::string& label, TorchPick pick) {
  Unpickled u;
  size_t at = 0;
  auto next = [&](const char* what, const PersistentLoad& load) -> const PyValue& {
    unpickle(bytes, at, label + ": " + what, load, u);
    at = u.end;
    return *u.root;
  };
  const PersistentLoad none;
  next("magic number", none);
  const PyValue& version = next("protocol version", none);
  VT_CHECK(version.kind == K::integer && version.i == 1001, "[torch] ", label,
           ": legacy format protocol version is not 1001");
  const PyValue& sys_info = next("system info", none);
  if (sys_info.kind == K::dict)
    if (const PyValue* le = entry(sys_info, "little_endian"))
      VT_CHECK(le->kind == K::boolean && le->i == 1, "[torch] ", label,
               ": written on a big-endian machine; only little-endian checkpoints are supported");
  std::map<std::string, const PyValue*> storages;  // root key -> root storage (its dtype sizes the data)
  const PersistentLoad load = [&](PyValue& pid, Unpickled& arena) {
    PyValue* s = storage_from_pid(pid, arena, label + ": pickle", true);
    const PyValue* root = s->view_of ? s->view_of : s;
    storages.emplace(root->s, root);
    return s;
  };
  const PyValue& root = next("pickle", load);
  const PyValue& keys = next("storage keys", none);
  VT_CHECK(keys.kind == K::list, "[torch] ", label, ": the legacy storage key list is ", keys.describe());

  std::map<std::string, std::string_view> data;  // root key -> bytes
  for (const PyValue* k : keys.items) {
    VT_CHECK(k->kind == K::string, "[torch] ", label, ": a storage key that is ", k->describe());
    const auto s = storages.find(k->s);
    VT_CHECK(s != storages.end(), "[torch] ", label, ": storage '", k->s, "' is listed but no tensor uses it");
    VT_CHECK(bytes.size() - at >= 8, "[torch] ", label, ": the data of storage '", k->s, "' is missing (truncated?)");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[at + i]);
    at += 8;
    VT_CHECK(n == static_cast<uint64_t>(s->second->i), "[torch] ", label, ": storage '", k->s, "' has ", n,
             " elements in its data but ", s->second->i, " in the pickle");
    const uint64_t nbytes = n * torch_dtype_size(s->second->dtype);
    VT_CHECK(nbytes <= bytes.size() - at, "[torch] ", label, ": the data of storage '", k->s, "' (", nbytes,
             " bytes) runs past the end of the file (truncated?)");
    VT_CHECK(data.emplace(k->s, bytes.substr(at, nbytes)).second, "[torch] ", label, ": storage '", k->s,
             "' listed twice");
    at += nbytes;
  }
  VT_CHECK(at == bytes.size(), "[torch] ", label, ": ", bytes.size() - at, " bytes after the last storage");

  Chosen chosen = choose_state_dict(root, label, pick);
  TorchStateDictRecords out;
  out.source_key = std::move(chosen.source_key);
  out.other_keys = std::move(chosen.other_keys);
  for (const auto& [name, t] : chosen.tensors) {
    const PyValue& s = *t->items[0];
    const PyValue& rs = s.view_of ? *s.view_of : s;
    const auto it = data.find(rs.s);
    VT_CHECK(it != data.end(), "[torch] ", label, ": tensor '", name, "' uses storage '", rs.s,
             "', whose data the file does not list");
    const size_t elsize = torch_dtype_size(s.dtype);
    check_storage_size(rs, it->second.size(), label, "its data");
    std::string_view view =
        it->second.substr(static_cast<size_t>(s.view_offset) * elsize, static_cast<size_t>(s.i) * elsize);
    VT_CHECK(rs.dtype == s.dtype, "[torch] ", label, ": tensor '", name, "': a storage view of another dtype");
    out.tensors.push_back(make_record(name, *t, view, label));
  }
  return out;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while (!(mant & 0x400));
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

bool has_torch_magic(std::string_view head) {
  return head.substr(0, 4) == std::string_view("PK\3\4", 4) ||
         head.substr(0, kLegacyMagicSize) == std::string_view(kLegacyMagic, kLegacyMagicSize);
}

TorchStateDictRecords parse_torch_checkpoint(std::string_view bytes, const std::string& label, TorchPick pick,
                                             bool verify_crc) {
  if (bytes.substr(0, kLegacyMagicSize) == std::string_view(kLegacyMagic, kLegacyMagicSize))
    return read_legacy(bytes, label, pick);
  if (bytes.substr(0, 4) == std::string_view("PK\3\4", 4)) return read_zip(bytes, label, pick, verify_crc);
  VT_CHECK(!(bytes.size() > 262 && bytes.substr(257, 5) == "ustar"), "[torch] ", label,
           ": a tar file: the format of torch < 0.4; re-save it with a newer torch (torch.save)");
  VT_FAIL("[torch] ", label, ": not a PyTorch checkpoint (neither torch's zip format nor its legacy pickle; ",
          bytes.size(), " bytes)");
}

DType torch_read_dtype(TorchDType t) {
  switch (t) {
    case TorchDType::f64: return DType::f64;
    case TorchDType::f32:
    case TorchDType::f16: return DType::f32;
    case TorchDType::bf16: return DType::bf16;
    case TorchDType::i64: return DType::i64;
    case TorchDType::i32:
    case TorchDType::i16:
    case TorchDType::i8: return DType::i32;
    case TorchDType::u8:
    case TorchDType::boolean: return DType::u8;
  }
  return DType::f32;
}

void copy_torch_elements(const TorchTensorRecord& r, void* out) {
  if (r.numel == 0) return;
  const size_t in_size = torch_dtype_size(r.dtype), out_size = dtype_size(torch_read_dtype(r.dtype));
  const auto* src = reinterpret_cast<const unsigned char*>(r.storage.data());
  auto* dst = static_cast<unsigned char*>(out);
  auto convert = [&](const unsigned char* s, unsigned char* d) {
    switch (r.dtype) {
      case TorchDType::f16: {
        const float f = half_to_float(static_cast<uint16_t>(s[0] | (s[1] << 8)));
        std::memcpy(d, &f, 4);
        return;
      }
      case TorchDType::i16: {
        int16_t v;
        std::memcpy(&v, s, 2);
        const int32_t w = v;
        std::memcpy(d, &w, 4);
        return;
      }
      case TorchDType::i8: {
        const int32_t w = static_cast<int8_t>(s[0]);
        std::memcpy(d, &w, 4);
        return;
      }
      case TorchDType::boolean: *d = s[0] != 0; return;
      default: std::memcpy(d, s, in_size);
    }
  };
  // Row-major walk over the view with an index counter; the innermost dimension is a tight loop.
  const size_t dims = r.shape.size();
  if (dims == 0) {
    convert(src + r.offset * in_size, dst);
    return;
  }
  const int64_t inner = r.shape[dims - 1], inner_stride = r.strides[dims - 1];
  std::vector<int64_t> index(dims, 0);
  int64_t base = r.offset;
  for (int64_t done = 0; done < r.numel; done += inner) {
    if (inner_stride == 1 && in_size == out_size && r.dtype != TorchDType::boolean) {
      std::memcpy(dst, src + base * in_size, inner * in_size);
      dst += inner * out_size;
    } else {
      for (int64_t i = 0; i < inner; ++i, dst += out_size) convert(src + (base + i * inner_stride) * in_size, dst);
    }
    for (size_t d = dims - 1; d-- > 0;) {  // carry into the outer dimensions
      base += r.strides[d];
      if (++index[d] < r.shape[d]) break;
      base -= r.strides[d] * r.shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace vt::io
