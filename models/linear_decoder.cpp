#include "models/linear_decoder.h"

#include "core/error.h"
#include "ops/ops.h"

namespace vt::models {

LinearDecoder::LinearDecoder(int64_t dim, int64_t num_classes, Generator& gen) {
  head = register_module("head", std::make_shared<nn::Linear>(dim, num_classes, true, gen));
}

Tensor LinearDecoder::forward(const Tensor& patches, int64_t grid_h, int64_t grid_w) const {
  VT_CHECK(patches.dim() == 3 && patches.size(1) == grid_h * grid_w, "[linear decoder] patches must be [B, ",
           grid_h * grid_w, ", D], got ", to_string(patches.shape()));
  Tensor masks = head->forward(patches);  // [B, N, K]; bf16 under autocast
  if (masks.dtype() == DType::bf16) masks = masks.to(DType::f32);
  const int64_t B = patches.size(0), K = masks.size(2);
  return masks.transpose(1, 2).reshape({B, K, grid_h, grid_w});
}

}  // namespace vt::models
