// ToTensor + Normalize + RandomErasing of a batch of 8-bit pixels on the training device, as timm's
// PrefetchLoader does: workers ship u8 HWC pixels (a quarter of the f32 bytes, and no per-pixel float work on the
// CPU) plus each sample's ErasingDraw, and this runs where the batch lands. The CPU version is the oracle; the
// CUDA kernel computes the same f32 values (normalization bit for bit, the erasing noise within float rounding of
// log/sin/cos).
#pragma once
#include "data/transforms.h"
#include "tensor/tensor.h"

namespace vt::data {

/// Columns of the i64 [B, 5] erasing tensor: the box, then the noise seed's bits (width 0: no erasing).
enum ErasingColumn { kEraseX = 0, kEraseY, kEraseWidth, kEraseHeight, kEraseSeed, kErasingColumns };

/// Writes one sample's draw into its row of an erasing tensor's data.
void store_erasing(const ErasingDraw& d, int64_t* row);

/// u8 [B, H, W, C] pixels (C 1 or 3) and i64 [B, 5] erasing draws, both on one device, to f32 [B, C, H, W]
/// (v/255 - mean)/std with each sample's box filled with N(0,1) values (fill_erasing). An undefined `erasing`
/// erases nothing.
Tensor normalize_and_erase(const Tensor& pixels, const Tensor& erasing, const Normalization& norm);

}  // namespace vt::data
