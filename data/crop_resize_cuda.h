// Device side of data/crop_resize. Built only with CUDA.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace vt::data::cuda {

/// Pillow's fixed-point fraction bits (kPilPrecisionBits of data/pil_resize.h, which needs OpenCV: not for nvcc).
constexpr int kPrecisionBits = 22;

/// One sample as the kernels read it (the host fills these; 64 bytes each, copied as they are).
struct CropResizeItem {
  int64_t source = 0;  // byte offset of the image's first pixel in the image buffer
  int64_t mid = 0;     // byte offset of its horizontal pass's output [box height][size][3] in the scratch buffer
  int32_t stride = 0;  // bytes from one image row to the next
  int32_t x = 0, y = 0, width = 0, height = 0;  // the box
  int32_t flip = 0;
  int32_t h_taps = 0, v_taps = 0;      // weights per output of each pass
  int32_t h_coeffs = 0, v_coeffs = 0;  // offsets into the coefficients: bounds [size][2], then weights [size][taps]
  int32_t unused[2] = {};
};
static_assert(sizeof(CropResizeItem) == 64, "the host and the device share this layout");

/// out u8 [batch, size, size, 3]: the horizontal pass of every item into `mid`, then the vertical pass (mirrored
/// where flip is set). `items` and `coeffs` are device copies of the host's tables; `max_height` is the largest box
/// height. No host synchronisation.
void crop_resize(const uint8_t* images, const CropResizeItem* items, const int32_t* coeffs, int batch, int size,
                 int max_height, uint8_t* mid, uint8_t* out, cudaStream_t stream);

}  // namespace vt::data::cuda
