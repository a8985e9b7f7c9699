// The interface of a segmentation decoder (Segmenter's "decoder"): patch tokens of the encoder → class masks at
// patch resolution. Implemented by models/cbt_decoder (CBSA mask transformer) and models/linear_decoder.
#pragma once
#include "nn/module.h"

namespace vt::models {

class MaskDecoder : public nn::Module {
 public:
  /// patches [B, gh·gw, D] (row-major grid, CLS removed) → masks [B, num_classes, gh, gw] (f32 for f32/bf16
  /// input, f64 for f64).
  virtual Tensor forward(const Tensor& patches, int64_t grid_h, int64_t grid_w) const = 0;
};

}  // namespace vt::models
