// IDX reading: small files written here (gzipped and plain), malformed files, and the real Fashion-MNIST.
#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <filesystem>
#include <numeric>

#include "test_util.h"
#include "core/error.h"
#include "data/idx.h"
#include "io_temp_dir.h"

namespace vt::test {
namespace {

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string idx_images(uint32_t n, uint32_t rows, uint32_t cols, const std::vector<uint8_t>& px) {
  return be32(0x803) + be32(n) + be32(rows) + be32(cols) + std::string(px.begin(), px.end());
}

std::string idx_labels(const std::vector<uint8_t>& labels) {
  return be32(0x801) + be32(static_cast<uint32_t>(labels.size())) + std::string(labels.begin(), labels.end());
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  }
  gzclose(f);
}

std::vector<uint8_t> pattern(int64_t n, int64_t rows, int64_t cols) {
  std::vector<uint8_t> px(static_cast<size_t>(n * rows * cols));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        px[(i * rows + r) * cols + c] = static_cast<uint8_t>((i * 31 + r * 7 + c) % 256);
  return px;
}

TEST(Idx, ReadsPlainAndGzippedFiles) {
  TempDir dir;
  const auto px = pattern(3, 5, 7);
  const std::vector<uint8_t> labels = {4, 0, 9};
  for (bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzip" : "plain");
    const std::string img = dir.file(gz ? "i.gz" : "i"), lab = dir.file(gz ? "l.gz" : "l");
    if (gz) {
      write_gz(img, idx_images(3, 5, 7, px));
      write_gz(lab, idx_labels(labels));
    } else {
      write_bytes(img, idx_images(3, 5, 7, px));
      write_bytes(lab, idx_labels(labels));
    }
    data::IdxImages im = data::read_idx_images(img);
    EXPECT_EQ(im.n, 3);
    EXPECT_EQ(im.rows, 5);
    EXPECT_EQ(im.cols, 7);
    EXPECT_EQ(im.pixels, px);
    EXPECT_EQ(im.pixels[(2 * 5 + 4) * 7 + 6], (2 * 31 + 4 * 7 + 6) % 256);  // image 2, row 4, col 6
    EXPECT_EQ(data::read_idx_labels(lab), labels);
  }
  // Zero images is a valid (empty) file.
  write_bytes(dir.file("empty"), idx_images(0, 28, 28, {}));
  EXPECT_EQ(data::read_idx_images(dir.file("empty")).n, 0);
}

TEST(Idx, MalformedFilesFailNamingThePath) {
  TempDir dir;
  const std::string p = dir.file("bad");
  const auto px = pattern(2, 3, 3);

  write_bytes(p, idx_labels({1, 2}));
  EXPECT_CONTAINS(error_of([&] { data::read_idx_images(p); }), p + ": wrong magic 0x00000801, expected 0x00000803");
  write_bytes(p, idx_images(2, 3, 3, px));
  EXPECT_CONTAINS(error_of([&] { data::read_idx_labels(p); }), p + ": wrong magic 0x00000803, expected 0x00000801");

  std::string full = idx_images(2, 3, 3, px);
  write_bytes(p, full.substr(0, full.size() - 1));
  EXPECT_CONTAINS(error_of([&] { data::read_idx_images(p); }), p + ": truncated data: the header promises 18 bytes");
  write_bytes(p, full.substr(0, 10));
  EXPECT_CONTAINS(error_of([&] { data::read_idx_images(p); }), p + ": truncated header");
  write_bytes(p, full + "x");
  EXPECT_CONTAINS(error_of([&] { data::read_idx_images(p); }), p + ": unexpected bytes after");
  // Huge claimed sizes fail without allocating them first: absurd ones at once, large ones as truncated.
  write_bytes(p, idx_images(0xffffffff, 0xffff, 0xffff, px));
  EXPECT_CONTAINS(error_of([&] { data::read_idx_images(p); }), p + ": implausible size 4294967295x65535x65535");
  write_bytes(p, idx_images(1000000, 28, 28, px));
  EXPECT_CONTAINS(error_of([&] { data::read_idx_images(p); }), "promises 784000000 bytes but the file has 18");

  // Gzipped and truncated: as uncompressed content, and as a cut compressed stream.
  const std::string g = dir.file("bad.gz");
  write_gz(g, full.substr(0, full.size() - 3));
  EXPECT_CONTAINS(error_of([&] { data::read_idx_images(g); }), g + ": truncated data");
  write_gz(g, idx_images(50, 28, 28, pattern(50, 28, 28)));
  std::string compressed = read_bytes(g);
  write_bytes(g, compressed.substr(0, compressed.size() / 2));
  std::string e = error_of([&] { data::read_idx_images(g); });
  EXPECT_CONTAINS(e, g + ": ");
  EXPECT_TRUE(e.find("truncated") != std::string::npos) << e;

  const std::string missing = dir.file("nope-idx3-ubyte");
  EXPECT_CONTAINS(error_of([&] { data::read_idx_images(missing); }), "file not found: '" + missing + "'");
  EXPECT_CONTAINS(error_of([&] { data::read_idx_labels(missing); }), "file not found: '" + missing + "'");
}

struct MiniSet {
  std::string train_images, train_labels, test_images, test_labels;
};

MiniSet write_mini_fashion(const TempDir& dir, std::vector<uint8_t> train_labels, std::vector<uint8_t> test_labels) {
  MiniSet s;
  // Mixed: the train files gzipped, the test files plain (both spellings are accepted).
  s.train_images = dir.file("train-images-idx3-ubyte.gz");
  s.train_labels = dir.file("train-labels-idx1-ubyte.gz");
  s.test_images = dir.file("t10k-images-idx3-ubyte");
  s.test_labels = dir.file("t10k-labels-idx1-ubyte");
  write_gz(s.train_images, idx_images(4, 28, 28, pattern(4, 28, 28)));
  write_gz(s.train_labels, idx_labels(train_labels));
  write_bytes(s.test_images, idx_images(3, 28, 28, pattern(3, 28, 28)));
  write_bytes(s.test_labels, idx_labels(test_labels));
  return s;
}

TEST(Idx, LoadsAFashionMnistDirectoryAndChecksConsistency) {
  {
    TempDir dir;
    write_mini_fashion(dir, {0, 9, 3, 3}, {1, 2, 8});
    data::FashionMnist ds = data::load_fashion_mnist(dir.path().string());
    EXPECT_EQ(ds.train_images.n, 4);
    EXPECT_EQ(ds.test_images.n, 3);
    EXPECT_EQ(ds.train_labels, (std::vector<uint8_t>{0, 9, 3, 3}));
    EXPECT_EQ(ds.test_labels, (std::vector<uint8_t>{1, 2, 8}));
    EXPECT_EQ(ds.test_images.pixels, pattern(3, 28, 28));
  }
  {
    TempDir dir;
    MiniSet s = write_mini_fashion(dir, {0, 9, 3}, {1, 2, 8});
    EXPECT_CONTAINS(error_of([&] { data::load_fashion_mnist(dir.path().string()); }),
                    s.train_labels + " has 3 labels but " + s.train_images + " has 4 images");
  }
  {
    TempDir dir;
    MiniSet s = write_mini_fashion(dir, {0, 9, 3, 3}, {1, 10, 8});
    EXPECT_CONTAINS(error_of([&] { data::load_fashion_mnist(dir.path().string()); }),
                    s.test_labels + ": label 10 at index 1 is out of range 0..9");
  }
  {
    TempDir dir;
    MiniSet s = write_mini_fashion(dir, {0, 9, 3, 3}, {1, 2, 8});
    write_bytes(s.test_images, idx_images(3, 28, 27, pattern(3, 28, 27)));
    EXPECT_CONTAINS(error_of([&] { data::load_fashion_mnist(dir.path().string()); }), "28x28 images but");
    std::filesystem::remove(s.test_labels);
    std::string e = error_of([&] { data::load_fashion_mnist(dir.path().string()); });
    EXPECT_CONTAINS(e, s.test_labels + ".gz");
    EXPECT_CONTAINS(e, "'" + s.test_labels + "' exists");
  }
}

TEST(Idx, RealFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz") &&
      !std::filesystem::exists(dir + "/train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST not found in " << dir << " (scripts/setup.sh installs it)";
  if (std::filesystem::is_symlink(dir) &&
      std::filesystem::read_symlink(dir).string().find(".gpu-data") != std::string::npos)
    GTEST_SKIP() << dir << " is the GPU runner's subset (scripts/gpu_fmnist_subset.py), not the Debian package";
  data::FashionMnist ds = data::load_fashion_mnist(dir);
  EXPECT_EQ(ds.train_images.n, 60000);
  EXPECT_EQ(ds.test_images.n, 10000);
  for (const auto* im : {&ds.train_images, &ds.test_images}) {
    EXPECT_EQ(im->rows, 28);
    EXPECT_EQ(im->cols, 28);
    EXPECT_EQ(im->pixels.size(), static_cast<size_t>(im->n * 28 * 28));
  }
  // The published label order and the balanced classes (6000 / 1000 per class).
  EXPECT_EQ(std::vector<uint8_t>(ds.train_labels.begin(), ds.train_labels.begin() + 10),
            (std::vector<uint8_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  EXPECT_EQ(std::vector<uint8_t>(ds.test_labels.begin(), ds.test_labels.begin() + 10),
            (std::vector<uint8_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  std::array<int, 10> train_counts{}, test_counts{};
  for (uint8_t l : ds.train_labels) ++train_counts.at(l);
  for (uint8_t l : ds.test_labels) ++test_counts.at(l);
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(train_counts[c], 6000) << c;
    EXPECT_EQ(test_counts[c], 1000) << c;
  }
  // Pixel sums computed independently (Python gzip) for the first image and the whole training set.
  EXPECT_EQ(std::accumulate(ds.train_images.pixels.begin(), ds.train_images.pixels.begin() + 784, int64_t{0}), 76247);
  EXPECT_EQ(std::accumulate(ds.train_images.pixels.begin(), ds.train_images.pixels.end(), int64_t{0}), 3431114169LL);
}

}  // namespace
}  // namespace vt::test
