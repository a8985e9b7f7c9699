#include "models/segmenter.h"

#include "core/error.h"
#include "models/cbt_decoder.h"
#include "models/linear_decoder.h"
#include "models/registry.h"
#include "ops/interpolate.h"

namespace vt::models {

SegmenterConfig segmenter_config(const io::ModelConfig& m, uint64_t seed) {
  SegmenterConfig c;
  c.backbone = vit_config(m, seed);
  c.backbone.num_classes = 0;  // the decoder classifies the pixels; model.num_classes is its class count
  c.decoder = m.decoder;
  c.num_classes = m.num_classes > 0 ? m.num_classes : 150;
  return c;
}

Segmenter::Segmenter(const SegmenterConfig& cfg) : cfg_(cfg) {
  ViTConfig backbone = cfg.backbone;
  backbone.num_classes = 0;
  cfg_.backbone = backbone;
  VT_CHECK(cfg.num_classes > 0, "[segmenter] num_classes must be positive, got ", cfg.num_classes);
  VT_CHECK(backbone.patch_size > 0 && backbone.img_size % backbone.patch_size == 0, "[segmenter] image size ",
           backbone.img_size, " is not a multiple of the patch size ", backbone.patch_size);
  VT_CHECK(cfg.decoder.type == "cbt" || cfg.decoder.type == "linear", "[segmenter] unknown model.decoder.type '",
           cfg.decoder.type, "' (cbt | linear)");
  VT_CHECK(backbone.attention.type != "mhla", "[segmenter] model.attention.type 'mhla' has no CLS token and pads ",
           "the image, which the Segmenter's encoder layout does not follow");
  encoder = register_module("encoder", std::make_shared<VisionTransformer>(backbone));
  // The decoder's own stream, so changing it leaves the encoder's initialisation as it was.
  Generator gen(backbone.seed ^ 0x5e6d0dec0de5ULL);
  const io::DecoderConfig& d = cfg.decoder;
  if (d.type == "cbt") {
    CbtDecoderConfig c;
    c.dim = backbone.embed_dim, c.num_classes = cfg.num_classes, c.layers = d.layers, c.heads = d.heads;
    c.head_dim = d.head_dim, c.reps_grid = d.reps_grid;
    decoder = register_module("decoder", std::make_shared<CbtDecoder>(c, gen));
  } else if (d.type == "linear") {
    decoder = register_module("decoder", std::make_shared<LinearDecoder>(backbone.embed_dim, cfg.num_classes, gen));
  } else {
    VT_FAIL("[segmenter] unknown model.decoder.type '", d.type, "' (cbt | linear)");
  }
}

Tensor Segmenter::forward_masks(const Tensor& images) const {
  const ViTConfig& b = cfg_.backbone;
  VT_CHECK(images.dim() == 4 && images.size(2) == b.img_size && images.size(3) == b.img_size,
           "[segmenter] images "
           "must be [B, C, ",
           b.img_size, ", ", b.img_size, "] (the crop size), got ", to_string(images.shape()));
  const Tensor tokens = encoder->forward_features(images);  // [B, 1 + G², D] after the final norm
  const int64_t G = b.img_size / b.patch_size;
  return decoder->forward(tokens.slice(1, 1, tokens.size(1)), G, G);  // CLS removed
}

Tensor Segmenter::forward(const Tensor& images) const {
  Tensor masks = forward_masks(images);
  return ops::interpolate_bilinear(masks, images.size(2), images.size(3));
}

}  // namespace vt::models
