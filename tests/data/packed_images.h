// Images packed into one u8 buffer as a batched crop + resize reads them (data/crop_resize), for its tests.
#pragma once
#include <algorithm>
#include <cstring>
#include <opencv2/core.hpp>
#include <vector>

#include "data/crop_resize.h"
#include "tensor/tensor.h"

namespace vt::test {

// Copies `img` into `buffer` at `offset` with rows `stride` bytes apart; returns its sample (box and flip unset).
inline data::CropResizeSample place(std::vector<uint8_t>& buffer, const cv::Mat& img, int64_t offset, int stride) {
  buffer.resize(std::max<size_t>(buffer.size(), static_cast<size_t>(offset + int64_t{stride} * img.rows)), 0xAB);
  for (int y = 0; y < img.rows; ++y)
    std::memcpy(buffer.data() + offset + int64_t{stride} * y, img.ptr<uint8_t>(y), static_cast<size_t>(img.cols) * 3);
  data::CropResizeSample s;
  s.offset = offset, s.width = img.cols, s.height = img.rows, s.stride = stride;
  return s;
}

inline Tensor to_tensor(const std::vector<uint8_t>& bytes) {
  Tensor t = Tensor::empty({static_cast<int64_t>(bytes.size())}, DType::u8);
  std::memcpy(t.data<uint8_t>(), bytes.data(), bytes.size());
  return t;
}

}  // namespace vt::test
