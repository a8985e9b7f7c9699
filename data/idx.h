// IDX files (the MNIST / Fashion-MNIST container: big-endian magic and dimensions, then raw u8 data), read
// gzip-compressed or plain, and the Fashion-MNIST train/test split built from them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt::data {

/// n images of rows x cols u8 pixels, row-major, image after image.
struct IdxImages {
  int64_t n = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // [n, rows, cols]
};

/// Reads an image file (magic 0x00000803). `path` may be gzip-compressed or plain (detected from the content).
/// Throws vt::Error naming the path: missing file, wrong magic, truncated data, or bytes after the data.
IdxImages read_idx_images(const std::string& path);

/// Reads a label file (magic 0x00000801); same handling and errors as read_idx_images.
std::vector<uint8_t> read_idx_labels(const std::string& path);

struct FashionMnist {
  IdxImages train_images, test_images;
  std::vector<uint8_t> train_labels, test_labels;
};

/// Loads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte
/// from `dir`, each as `<name>.gz` or, if that is absent, `<name>`. Checks that image and label counts match,
/// that train and test images have the same size and that every label is in 0..9.
FashionMnist load_fashion_mnist(const std::string& dir);

}  // namespace vt::data
