// Segmenter (Strudel et al.) as MiTA's Table 4 uses it: a ViT encoder without classifier (timm names under
// `encoder.`) and a mask decoder (`decoder.`: CBT or linear) whose patch-resolution masks are upsampled
// bilinearly to the input size.
#pragma once
#include <memory>

#include "io/config.h"
#include "models/seg_decoder.h"
#include "models/vit.h"

namespace vt::models {

struct SegmenterConfig {
  ViTConfig backbone;         ///< num_classes ignored (no classification head); img_size = crop
  io::DecoderConfig decoder;  ///< type cbt | linear
  int64_t num_classes = 150;
};

/// The preset model.name with the config's overrides (as engine::vit_config), backbone num_classes 0,
/// num_classes = model.num_classes (150 when 0), the decoder section, initialisation seed `seed`.
SegmenterConfig segmenter_config(const io::ModelConfig& m, uint64_t seed);

class Segmenter : public nn::Module {
 public:
  explicit Segmenter(const SegmenterConfig& cfg);
  /// images [B, 3, S, S], S = backbone.img_size → logits [B, num_classes, S, S] (f32; bilinear upsampled).
  Tensor forward(const Tensor& images) const;
  /// The decoder's masks at patch resolution [B, num_classes, S/p, S/p] (f32; f64 for f64 images).
  Tensor forward_masks(const Tensor& images) const;
  const SegmenterConfig& config() const { return cfg_; }

  std::shared_ptr<VisionTransformer> encoder;
  std::shared_ptr<MaskDecoder> decoder;

 private:
  SegmenterConfig cfg_;
};

}  // namespace vt::models
