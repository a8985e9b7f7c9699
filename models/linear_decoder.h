// Segmenter's DecoderLinear: one Linear(D → K) per patch token (`head`), the simple baseline decoder.
#pragma once
#include <memory>

#include "core/rng.h"
#include "models/seg_decoder.h"
#include "nn/layers.h"

namespace vt::models {

class LinearDecoder : public MaskDecoder {
 public:
  /// head: Linear(dim → num_classes), trunc_normal(.02) weight, zero bias (Segmenter's init_weights).
  LinearDecoder(int64_t dim, int64_t num_classes, Generator& gen);
  /// patches [B, gh·gw, D] → masks [B, K, gh, gw] in f32 (f64 for f64 input).
  Tensor forward(const Tensor& patches, int64_t grid_h, int64_t grid_w) const override;
  std::shared_ptr<nn::Linear> head;
};

}  // namespace vt::models
