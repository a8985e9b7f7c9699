// Stored-zip reader and writer. Every offset read from the file is checked against the file size before it is
// used; arithmetic is on uint64_t and each sum is checked for the range it must stay in.
#include "io/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "io/atomic_file.h"

namespace vt::io {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kEnd64Size = 56, kLocator64Size = 20;
constexpr uint16_t kZip64ExtraId = 0x0001, kPadExtraId = 0x4246;  // torch pads with an extra field "FB"
constexpr uint64_t kAlign = 64;

uint64_t le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void put_le(std::string& s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Bounds-checked reads of the file bytes; `what` says which record a failure is in.
struct Reader {
  std::string_view bytes;
  const std::string& label;
  const std::string& tag;
  const unsigned char* at(uint64_t offset, uint64_t n, const char* what) const {
    VT_CHECK(offset <= bytes.size() && n <= bytes.size() - offset, "[", tag, "] ", label, ": the zip's ", what, " (", n,
             " bytes at offset ", offset, ") lies outside the ", bytes.size(), "-byte file (truncated?)");
    return reinterpret_cast<const unsigned char*>(bytes.data()) + offset;
  }
};

}  // namespace

uint32_t zip_crc32(const void* data, size_t n) {
  return static_cast<uint32_t>(::crc32_z(0, static_cast<const Bytef*>(data), n));
}

std::vector<ZipEntry> read_stored_zip(std::string_view bytes, const std::string& label, const std::string& tag,
                                      bool verify_crc) {
  const Reader r{bytes, label, tag};
  VT_CHECK(bytes.size() >= kEndSize, "[", tag, "] ", label, ": ", bytes.size(),
           " bytes is too short for a zip file (truncated?)");
  // The end record is the last one with its signature within the final 64 KiB (a comment may follow it).
  uint64_t end_at = bytes.size() - kEndSize;
  const uint64_t lowest = end_at > 0xffff ? end_at - 0xffff : 0;
  while (le(r.at(end_at, 4, "end record"), 4) != kEndSig) {
    VT_CHECK(end_at > lowest, "[", tag, "] ", label,
             ": no zip end-of-central-directory record (truncated, or not a zip file)");
    --end_at;
  }
  const unsigned char* end = r.at(end_at, kEndSize, "end record");
  uint64_t count = le(end + 10, 2), dir_size = le(end + 12, 4), dir_offset = le(end + 16, 4);
  VT_CHECK(le(end + 4, 2) == 0 && le(end + 6, 2) == 0 && le(end + 8, 2) == count, "[", tag, "] ", label,
           ": multi-disk zip archives are not supported");
  uint64_t dir_limit = end_at;
  if (count == 0xffff || dir_size == 0xffffffff || dir_offset == 0xffffffff) {
    VT_CHECK(end_at >= kLocator64Size, "[", tag, "] ", label, ": zip64 end record locator missing");
    const unsigned char* loc = r.at(end_at - kLocator64Size, kLocator64Size, "zip64 locator");
    VT_CHECK(le(loc, 4) == kLocator64Sig, "[", tag, "] ", label, ": zip64 end record locator missing");
    const uint64_t end64_at = le(loc + 8, 8);
    VT_CHECK(end64_at <= end_at - kLocator64Size, "[", tag, "] ", label, ": zip64 end record offset ", end64_at,
             " is past its locator");
    const unsigned char* end64 = r.at(end64_at, kEnd64Size, "zip64 end record");
    VT_CHECK(le(end64, 4) == kEnd64Sig, "[", tag, "] ", label, ": bad zip64 end record signature");
    count = le(end64 + 32, 8);
    dir_size = le(end64 + 40, 8);
    dir_offset = le(end64 + 48, 8);
    dir_limit = end64_at;
  }
  VT_CHECK(dir_offset <= dir_limit && dir_size <= dir_limit - dir_offset, "[", tag, "] ", label,
           ": the central directory (", dir_size, " bytes at ", dir_offset, ") overlaps the end records");
  VT_CHECK(count <= dir_size / kCentralSize, "[", tag, "] ", label, ": ", count, " entries cannot fit in a ", dir_size,
           "-byte central directory");

  std::vector<ZipEntry> entries;
  entries.reserve(count);
  std::set<std::string> names;
  uint64_t pos = dir_offset;
  const uint64_t dir_end = dir_offset + dir_size;
  for (uint64_t i = 0; i < count; ++i) {
    VT_CHECK(dir_end - pos >= kCentralSize, "[", tag, "] ", label, ": central directory entry ", i,
             " runs past the directory");
    const unsigned char* c = r.at(pos, kCentralSize, "central directory entry");
    VT_CHECK(le(c, 4) == kCentralSig, "[", tag, "] ", label, ": bad signature of central directory entry ", i);
    const uint64_t flags = le(c + 8, 2), method = le(c + 10, 2);
    const uint32_t crc = static_cast<uint32_t>(le(c + 16, 4));
    uint64_t csize = le(c + 20, 4), usize = le(c + 24, 4), local_at = le(c + 42, 4);
    const uint64_t name_len = le(c + 28, 2), extra_len = le(c + 30, 2), comment_len = le(c + 32, 2);
    VT_CHECK(dir_end - pos - kCentralSize >= name_len + extra_len + comment_len, "[", tag, "] ", label,
             ": central directory entry ", i, " runs past the directory");
    const char* name_p = reinterpret_cast<const char*>(c + kCentralSize);
    std::string name(name_p, name_len);
    // Zip64 extra: the 64-bit values of the fields that hold 0xffffffff, in this order.
    const unsigned char* extra = c + kCentralSize + name_len;
    for (uint64_t e = 0; e + 4 <= extra_len;) {
      const uint64_t id = le(extra + e, 2), len = le(extra + e + 2, 2);
      VT_CHECK(e + 4 + len <= extra_len, "[", tag, "] ", label, ": entry '", name, "': malformed extra field");
      if (id == kZip64ExtraId) {
        uint64_t k = e + 4;
        for (uint64_t* field : {&usize, &csize, &local_at}) {
          if (*field != 0xffffffff) continue;
          VT_CHECK(k + 8 <= e + 4 + len, "[", tag, "] ", label, ": entry '", name, "': zip64 extra field too short");
          *field = le(extra + k, 8);
          k += 8;
        }
      }
      e += 4 + len;
    }
    VT_CHECK(!(flags & 1), "[", tag, "] ", label, ": entry '", name, "' is encrypted");
    VT_CHECK(method == 0, "[", tag, "] ", label, ": entry '", name, "' is compressed (zip method ", method,
             "); torch.save writes stored entries: re-save the checkpoint with torch.save instead of re-zipping it");
    VT_CHECK(csize == usize, "[", tag, "] ", label, ": stored entry '", name, "' has compressed size ", csize,
             " != size ", usize);
    VT_CHECK(names.insert(name).second, "[", tag, "] ", label, ": duplicate zip entry '", name, "'");

    const unsigned char* l = r.at(local_at, kLocalSize, "local header");
    VT_CHECK(le(l, 4) == kLocalSig, "[", tag, "] ", label, ": entry '", name, "': bad local header signature");
    const uint64_t lname_len = le(l + 26, 2), lextra_len = le(l + 28, 2);
    const unsigned char* lname = r.at(local_at + kLocalSize, lname_len, "local header name");
    VT_CHECK(std::string_view(reinterpret_cast<const char*>(lname), lname_len) == name, "[", tag, "] ", label,
             ": entry '", name, "': its local header names a different file");
    const uint64_t data_at = local_at + kLocalSize + lname_len + lextra_len;
    VT_CHECK(data_at <= dir_offset && usize <= dir_offset - data_at, "[", tag, "] ", label, ": entry '", name, "' (",
             usize, " bytes at ", data_at, ") runs into the central directory (truncated?)");
    const std::string_view data(bytes.data() + data_at, usize);
    if (verify_crc)
      VT_CHECK(zip_crc32(data.data(), data.size()) == crc, "[", tag, "] ", label, ": entry '", name,
               "' fails its CRC-32 check (the file is corrupted)");
    entries.push_back({std::move(name), data, crc});
    pos += kCentralSize + name_len + extra_len + comment_len;
  }
  return entries;
}

void StoredZipWriter::put(const std::string& bytes) {
  out_.write(bytes);
  pos_ += bytes.size();
}

void StoredZipWriter::add(const std::string& name, const std::vector<std::pair<const void*, size_t>>& parts) {
  uint64_t size = 0;
  uLong crc = ::crc32_z(0, nullptr, 0);
  for (const auto& [p, n] : parts) {
    crc = ::crc32_z(crc, static_cast<const Bytef*>(p), n);
    size += n;
  }
  const bool zip64 = force_zip64_ || size >= 0xffffffff;
  std::string h;
  put_le(h, kLocalSig, 4);
  put_le(h, zip64 ? 45 : 20, 2);  // version needed
  put_le(h, 0, 2);                // flags
  put_le(h, 0, 2);                // stored
  put_le(h, 0, 2);                // time
  put_le(h, (1 << 5) | 1, 2);     // date: 1980-01-01, the zip epoch (reproducible files)
  put_le(h, crc, 4);
  put_le(h, zip64 ? 0xffffffff : size, 4);
  put_le(h, zip64 ? 0xffffffff : size, 4);
  put_le(h, name.size(), 2);
  const uint64_t fixed = kLocalSize + name.size() + (zip64 ? 20 : 0);
  uint64_t pad = (kAlign - (pos_ + fixed) % kAlign) % kAlign;
  if (pad > 0 && pad < 4) pad += kAlign;  // the padding extra field needs 4 bytes of its own header
  put_le(h, (zip64 ? 20 : 0) + pad, 2);
  h += name;
  if (zip64) {
    put_le(h, kZip64ExtraId, 2);
    put_le(h, 16, 2);
    put_le(h, size, 8);
    put_le(h, size, 8);
  }
  if (pad > 0) {
    put_le(h, kPadExtraId, 2);
    put_le(h, pad - 4, 2);
    h.append(pad - 4, 'Z');
  }
  entries_.push_back({name, pos_, size, static_cast<uint32_t>(crc)});
  put(h);
  for (const auto& [p, n] : parts) {
    if (n > 0) out_.write(p, n);
    pos_ += n;
  }
}

void StoredZipWriter::finish() {
  const uint64_t dir_offset = pos_;
  std::string d;
  for (const Written& e : entries_) {
    const bool zip64 = force_zip64_ || e.size >= 0xffffffff || e.offset >= 0xffffffff;
    put_le(d, kCentralSig, 4);
    put_le(d, zip64 ? 45 : 20, 2);  // version made by
    put_le(d, zip64 ? 45 : 20, 2);  // version needed
    put_le(d, 0, 2);
    put_le(d, 0, 2);
    put_le(d, 0, 2);
    put_le(d, (1 << 5) | 1, 2);
    put_le(d, e.crc, 4);
    put_le(d, zip64 ? 0xffffffff : e.size, 4);
    put_le(d, zip64 ? 0xffffffff : e.size, 4);
    put_le(d, e.name.size(), 2);
    put_le(d, zip64 ? 28 : 0, 2);  // extra
    put_le(d, 0, 2);               // comment
    put_le(d, 0, 2);               // disk
    put_le(d, 0, 2);               // internal attributes
    put_le(d, 0, 4);               // external attributes
    put_le(d, zip64 ? 0xffffffff : e.offset, 4);
    d += e.name;
    if (zip64) {
      put_le(d, kZip64ExtraId, 2);
      put_le(d, 24, 2);
      put_le(d, e.size, 8);
      put_le(d, e.size, 8);
      put_le(d, e.offset, 8);
    }
  }
  put(d);
  const uint64_t dir_size = pos_ - dir_offset, count = entries_.size();
  const bool zip64 = force_zip64_ || count >= 0xffff || dir_size >= 0xffffffff || dir_offset >= 0xffffffff;
  std::string t;
  if (zip64) {
    const uint64_t end64_at = pos_;
    put_le(t, kEnd64Sig, 4);
    put_le(t, kEnd64Size - 12, 8);  // size of the rest of the record
    put_le(t, 45, 2);
    put_le(t, 45, 2);
    put_le(t, 0, 4);
    put_le(t, 0, 4);
    put_le(t, count, 8);
    put_le(t, count, 8);
    put_le(t, dir_size, 8);
    put_le(t, dir_offset, 8);
    put_le(t, kLocator64Sig, 4);
    put_le(t, 0, 4);
    put_le(t, end64_at, 8);
    put_le(t, 1, 4);
  }
  put_le(t, kEndSig, 4);
  put_le(t, 0, 2);
  put_le(t, 0, 2);
  put_le(t, zip64 ? 0xffff : count, 2);
  put_le(t, zip64 ? 0xffff : count, 2);
  put_le(t, zip64 ? 0xffffffff : dir_size, 4);
  put_le(t, zip64 ? 0xffffffff : dir_offset, 4);
  put_le(t, 0, 2);
  put(t);
}

}  // namespace vt::io
