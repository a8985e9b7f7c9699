// RandomResizedCrop's geometry for a whole batch where the decoded images are (the host, or the GPU after a device
// JPEG decode): each sample's box cut from its image, resized to size × size exactly as pil_resize does (Pillow's
// filters and fixed-point coefficients, its 8-bit intermediate after the horizontal pass), then mirrored when the
// sample's draw flips it. The CPU runs pil_resize per sample and is the oracle; the CUDA kernels use the same
// coefficients (pil_coefficients, built on the host) and give the same bytes.
#pragma once
#include <cstdint>
#include <vector>

#include "data/pil_resize.h"
#include "data/transforms.h"
#include "tensor/tensor.h"

namespace vt::data {

/// Where one sample's decoded RGB image lies in the batch's image buffer, and what to cut from it.
struct CropResizeSample {
  int64_t offset = 0;                     // byte offset of its first pixel
  int width = 0, height = 0, stride = 0;  // pixels; bytes from one row to the next (≥ 3 · width)
  CropBox box;                            // inside the image
  bool flip = false;                      // mirror the result left to right
};

/// images: u8 [bytes] (CPU or CUDA) holding every sample's u8 HWC RGB image; returns u8 [B, size, size, 3] on the
/// same device.
Tensor crop_resize_batch(const Tensor& images, const std::vector<CropResizeSample>& samples, int size,
                         PilFilter filter = PilFilter::bicubic);

}  // namespace vt::data
