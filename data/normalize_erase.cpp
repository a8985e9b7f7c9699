#include "data/normalize_erase.h"

#include "core/error.h"

#ifdef VT_WITH_CUDA
#include "data/normalize_erase_cuda.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/stream.h"
#endif

namespace vt::data {

void store_erasing(const ErasingDraw& d, int64_t* row) {
  row[kEraseX] = d.box.x;
  row[kEraseY] = d.box.y;
  row[kEraseWidth] = d.box.width;
  row[kEraseHeight] = d.box.height;
  row[kEraseSeed] = static_cast<int64_t>(d.noise_seed);
}

Tensor normalize_and_erase(const Tensor& pixels, const Tensor& erasing, const Normalization& norm) {
  VT_CHECK(pixels.dtype() == DType::u8 && pixels.dim() == 4,
           "[data] normalize_and_erase: pixels must be u8 [B, H, W, C], got ", pixels.describe());
  const int64_t B = pixels.size(0);
  const int H = static_cast<int>(pixels.size(1)), W = static_cast<int>(pixels.size(2)),
            C = static_cast<int>(pixels.size(3));
  VT_CHECK(C == 1 || C == 3, "[data] normalize_and_erase: ", C, " channels");
  if (erasing.defined()) {
    VT_CHECK(erasing.dtype() == DType::i64 && erasing.dim() == 2 && erasing.size(0) == B &&
                 erasing.size(1) == kErasingColumns,
             "[data] normalize_and_erase: erasing must be i64 [", B, ", ", int{kErasingColumns}, "], got ",
             erasing.describe());
    VT_CHECK(erasing.device() == pixels.device(), "[data] normalize_and_erase: pixels on ", pixels.device().str(),
             ", erasing on ", erasing.device().str());
  }
  const Tensor px = pixels.contiguous();
  const Tensor er = erasing.defined() ? erasing.contiguous() : Tensor();
  Tensor out = Tensor::empty({B, C, H, W}, DType::f32, pixels.device());
  if (pixels.device().is_cuda()) {
#ifdef VT_WITH_CUDA
    kernels::cuda::DeviceGuard guard(pixels.device().index);
    cuda::normalize_and_erase(px.data<uint8_t>(), er.defined() ? er.data<int64_t>() : nullptr, out.data<float>(), B, C,
                              H, W, norm.mean, norm.std, kernels::cuda::current_stream());
#else
    fail_without_cuda("normalize_and_erase", pixels.device());
#endif
    return out;
  }
  const int64_t per_image = static_cast<int64_t>(C) * H * W;
  for (int64_t b = 0; b < B; ++b) {
    const cv::Mat img(H, W, CV_8UC(C), const_cast<uint8_t*>(px.data<uint8_t>() + b * per_image));
    float* dst = out.data<float>() + b * per_image;
    to_normalized_chw(img, norm, dst);
    if (er.defined()) {
      const int64_t* row = er.data<int64_t>() + b * kErasingColumns;
      const ErasingDraw d{{static_cast<int>(row[kEraseX]), static_cast<int>(row[kEraseY]),
                           static_cast<int>(row[kEraseWidth]), static_cast<int>(row[kEraseHeight])},
                          static_cast<uint64_t>(row[kEraseSeed])};
      fill_erasing(dst, C, H, W, d);
    }
  }
  return out;
}

}  // namespace vt::data
