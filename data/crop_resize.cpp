#include "data/crop_resize.h"

#include <algorithm>
#include <cstring>
#include <opencv2/core.hpp>

#include "core/error.h"

#ifdef VT_WITH_CUDA
#include "data/crop_resize_cuda.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/stream.h"
#endif

namespace vt::data {
namespace {

void check_sample(const CropResizeSample& s, int64_t index, int64_t bytes) {
  const CropBox& b = s.box;
  VT_CHECK(s.width > 0 && s.height > 0 && s.stride >= 3 * static_cast<int64_t>(s.width), "[data] crop_resize: sample ",
           index, ": image ", s.width, "x", s.height, " with rows ", s.stride, " bytes apart (an RGB row needs ",
           3 * static_cast<int64_t>(s.width), ")");
  VT_CHECK(s.offset >= 0 && s.offset + static_cast<int64_t>(s.height - 1) * s.stride + 3 * s.width <= bytes,
           "[data] crop_resize: sample ", index, ": its ", s.width, "x", s.height, " image at byte ", s.offset,
           " runs past the ", bytes, "-byte image buffer");
  VT_CHECK(
      b.width > 0 && b.height > 0 && b.x >= 0 && b.y >= 0 && b.x + b.width <= s.width && b.y + b.height <= s.height,
      "[data] crop_resize: sample ", index, ": box ", b.width, "x", b.height, " at (", b.x, ", ", b.y,
      ") is not inside its ", s.width, "x", s.height, " image");
}

#ifdef VT_WITH_CUDA
static_assert(cuda::kPrecisionBits == kPilPrecisionBits, "the device rounds as pil_resize does");

// The kernels' tables in one u8 buffer: the items, then every item's coefficients of both passes (int32).
Tensor device_tables(const std::vector<CropResizeSample>& samples, int size, PilFilter filter, int64_t& mid_bytes) {
  const size_t B = samples.size();
  std::vector<cuda::CropResizeItem> items(B);
  std::vector<int32_t> coeffs;
  const auto append = [&](const PilCoefficients& c, int32_t& taps, int32_t& at) {
    taps = c.taps;
    at = static_cast<int32_t>(coeffs.size());
    coeffs.insert(coeffs.end(), c.bounds.begin(), c.bounds.end());
    coeffs.insert(coeffs.end(), c.weights.begin(), c.weights.end());
  };
  mid_bytes = 0;
  for (size_t i = 0; i < B; ++i) {
    const CropResizeSample& s = samples[i];
    cuda::CropResizeItem& it = items[i];
    it.source = s.offset;
    it.mid = mid_bytes;
    it.stride = s.stride;
    it.x = s.box.x, it.y = s.box.y, it.width = s.box.width, it.height = s.box.height;
    it.flip = s.flip;
    append(pil_coefficients(s.box.width, size, filter), it.h_taps, it.h_coeffs);
    append(pil_coefficients(s.box.height, size, filter), it.v_taps, it.v_coeffs);
    mid_bytes += static_cast<int64_t>(s.box.height) * size * 3;
    VT_CHECK(coeffs.size() < (size_t{1} << 31), "[data] crop_resize: the batch's coefficients pass 2^31 values");
  }
  const int64_t item_bytes = static_cast<int64_t>(B * sizeof(cuda::CropResizeItem));
  Tensor host = Tensor::empty({item_bytes + static_cast<int64_t>(coeffs.size() * sizeof(int32_t))}, DType::u8);
  std::memcpy(host.data<uint8_t>(), items.data(), static_cast<size_t>(item_bytes));
  std::memcpy(host.data<uint8_t>() + item_bytes, coeffs.data(), coeffs.size() * sizeof(int32_t));
  return host;
}
#endif

}  // namespace

Tensor crop_resize_batch(const Tensor& images, const std::vector<CropResizeSample>& samples, int size,
                         PilFilter filter) {
  VT_CHECK(images.dtype() == DType::u8 && images.dim() == 1,
           "[data] crop_resize: images must be a u8 [bytes] buffer, got ", images.describe());
  VT_CHECK(size > 0, "[data] crop_resize: output size ", size);
  const int64_t B = static_cast<int64_t>(samples.size()), bytes = images.numel();
  for (int64_t i = 0; i < B; ++i) check_sample(samples[static_cast<size_t>(i)], i, bytes);
  const Tensor src = images.contiguous();
  Tensor out = Tensor::empty({B, size, size, 3}, DType::u8, images.device());
  if (B == 0) return out;
  const int64_t per_image = static_cast<int64_t>(size) * size * 3;
  if (images.device().is_cuda()) {
#ifdef VT_WITH_CUDA
    kernels::cuda::DeviceGuard guard(images.device().index);
    int64_t mid_bytes = 0;
    const Tensor tables = device_tables(samples, size, filter, mid_bytes).to(images.device());
    const Tensor mid = Tensor::empty({mid_bytes}, DType::u8, images.device());
    int max_height = 0;
    for (const CropResizeSample& s : samples) max_height = std::max(max_height, s.box.height);
    const uint8_t* t = tables.data<uint8_t>();
    cuda::crop_resize(src.data<uint8_t>(), reinterpret_cast<const cuda::CropResizeItem*>(t),
                      reinterpret_cast<const int32_t*>(t + B * sizeof(cuda::CropResizeItem)), static_cast<int>(B), size,
                      max_height, mid.data<uint8_t>(), out.data<uint8_t>(), kernels::cuda::current_stream());
#else
    fail_without_cuda("crop_resize", images.device());
#endif
    return out;
  }
  for (int64_t i = 0; i < B; ++i) {
    const CropResizeSample& s = samples[static_cast<size_t>(i)];
    const cv::Mat img(s.height, s.width, CV_8UC3, const_cast<uint8_t*>(src.data<uint8_t>() + s.offset),
                      static_cast<size_t>(s.stride));
    const cv::Mat resized = pil_resize(img(cv::Rect(s.box.x, s.box.y, s.box.width, s.box.height)), size, size, filter);
    cv::Mat dst(size, size, CV_8UC3, out.data<uint8_t>() + i * per_image);
    if (s.flip) cv::flip(resized, dst, 1);
    else resized.copyTo(dst);
  }
  return out;
}

}  // namespace vt::data
