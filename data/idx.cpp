// IDX reading through zlib's gz* API, which also reads uncompressed files transparently. Data is read in
// chunks, so a corrupt header claiming billions of images fails as "truncated" instead of allocating them.
#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace vt::data {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // u8 data, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // u8 data, 1 dimension

class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    VT_CHECK(file_ != nullptr, "[idx] cannot open '", path, "': ", errno ? std::strerror(errno) : "gzopen failed");
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  /// Reads up to n bytes; returns how many were read (fewer only at end of file).
  size_t read(void* dst, size_t n) {
    size_t total = 0;
    auto* p = static_cast<unsigned char*>(dst);
    while (total < n) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - total, 1u << 30));
      int got = gzread(file_, p + total, chunk);
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(file_, &errnum);
        VT_FAIL("[idx] ", path_, ": read error: ", msg ? msg : "unknown", " (truncated or corrupt gzip data?)");
      }
      if (got == 0) break;
      total += static_cast<size_t>(got);
    }
    return total;
  }

  uint32_t read_be32(const char* what) {
    unsigned char b[4];
    size_t got = read(b, 4);
    VT_CHECK(got == 4, "[idx] ", path_, ": truncated header (cannot read the ", what, ")");
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  }

  /// Reads exactly `n` bytes (in chunks), then checks that nothing follows.
  std::vector<uint8_t> read_payload(uint64_t n) {
    std::vector<uint8_t> out;
    constexpr uint64_t kChunk = 1 << 22;
    while (out.size() < n) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, n - out.size()));
      size_t old = out.size();
      out.resize(old + want);
      size_t got = read(out.data() + old, want);
      VT_CHECK(got == want, "[idx] ", path_, ": truncated data: the header promises ", n, " bytes but the file has ",
               old + got);
    }
    unsigned char extra;
    VT_CHECK(read(&extra, 1) == 0, "[idx] ", path_, ": unexpected bytes after the ", n, " data bytes");
    return out;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

void check_exists(const std::string& path) {
  std::error_code ec;
  VT_CHECK(std::filesystem::is_regular_file(path, ec), "[idx] file not found: '", path, "'");
}

void check_magic(const std::string& path, uint32_t got, uint32_t want, const char* kind) {
  if (got == want) return;
  char buf[64];
  std::snprintf(buf, sizeof buf, "0x%08x, expected 0x%08x", got, want);
  VT_FAIL("[idx] ", path, ": wrong magic ", buf, " (not an IDX ", kind, " file)");
}

std::string pick(const std::string& dir, const std::string& name) {
  std::filesystem::path base = std::filesystem::path(dir) / name;
  std::error_code ec;
  std::string gz = base.string() + ".gz";
  if (std::filesystem::is_regular_file(gz, ec)) return gz;
  if (std::filesystem::is_regular_file(base, ec)) return base.string();
  VT_FAIL("[idx] Fashion-MNIST file not found: neither '", gz, "' nor '", base.string(), "' exists");
}

void check_labels(const std::string& path, const std::vector<uint8_t>& labels, int64_t n_images,
                  const std::string& images_path) {
  VT_CHECK(static_cast<int64_t>(labels.size()) == n_images, "[idx] ", path, " has ", labels.size(), " labels but ",
           images_path, " has ", n_images, " images");
  for (size_t i = 0; i < labels.size(); ++i)
    VT_CHECK(labels[i] <= 9, "[idx] ", path, ": label ", int{labels[i]}, " at index ", i, " is out of range 0..9");
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  check_exists(path);
  GzReader r(path);
  check_magic(path, r.read_be32("magic number"), kImagesMagic, "images");
  IdxImages img;
  img.n = r.read_be32("image count");
  img.rows = r.read_be32("row count");
  img.cols = r.read_be32("column count");
  // Each dimension is < 2^32, so rows * cols fits in 64 bits but n * rows * cols may not.
  const uint64_t per_image = static_cast<uint64_t>(img.rows) * static_cast<uint64_t>(img.cols);
  VT_CHECK(per_image == 0 || static_cast<uint64_t>(img.n) <= (uint64_t{1} << 62) / per_image, "[idx] ", path,
           ": implausible size ", img.n, "x", img.rows, "x", img.cols);
  img.pixels = r.read_payload(static_cast<uint64_t>(img.n) * per_image);
  return img;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  check_exists(path);
  GzReader r(path);
  check_magic(path, r.read_be32("magic number"), kLabelsMagic, "labels");
  uint32_t n = r.read_be32("label count");
  return r.read_payload(n);
}

FashionMnist load_fashion_mnist(const std::string& dir) {
  FashionMnist ds;
  const std::string train_images = pick(dir, "train-images-idx3-ubyte");
  const std::string train_labels = pick(dir, "train-labels-idx1-ubyte");
  const std::string test_images = pick(dir, "t10k-images-idx3-ubyte");
  const std::string test_labels = pick(dir, "t10k-labels-idx1-ubyte");
  ds.train_images = read_idx_images(train_images);
  ds.train_labels = read_idx_labels(train_labels);
  ds.test_images = read_idx_images(test_images);
  ds.test_labels = read_idx_labels(test_labels);
  check_labels(train_labels, ds.train_labels, ds.train_images.n, train_images);
  check_labels(test_labels, ds.test_labels, ds.test_images.n, test_images);
  VT_CHECK(ds.train_images.rows == ds.test_images.rows && ds.train_images.cols == ds.test_images.cols, "[idx] ",
           train_images, " has ", ds.train_images.rows, "x", ds.train_images.cols, " images but ", test_images, " has ",
           ds.test_images.rows, "x", ds.test_images.cols);
  return ds;
}

}  // namespace vt::data
