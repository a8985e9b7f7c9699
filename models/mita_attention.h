// MiTA attention layers (model.attention.type = mita | mita_route | mita_compress), with the optional DWC and Gate of the
// official MiTA_Attention_Conv(_Gate) (docs/mita-spec.md §3). Same `qkv` and `proj` children as DenseAttention,
// so weights move between the kinds; the Gate replaces `qkv` [3C, C] by `qkvg` [4C, C] (q, k, v, g in order).
#pragma once
#include <utility>
#include <memory>

#include "models/attention.h"
#include "models/mita.h"

namespace vt::models {

/// Conv2d(C, C, 3, padding=1, groups=C, bias=True): weight [C, 1, 3, 3], bias [C], PyTorch's default init.
class DepthwiseConv3x3 : public nn::Module {
 public:
  DepthwiseConv3x3(int64_t channels, Generator& gen);
  Tensor forward(const Tensor& x) const;  // [B, C, H, W] → [B, C, H, W]
  /// weight and bias in `dtype` (under autocast the f32 master weights cast, recorded for autograd).
  std::pair<Tensor, Tensor> parameters_as(DType dtype) const;
  Tensor weight, bias;
};

/// x [B, N, C] → proj((MiTA(q, k, v) + pad(dwc(v_patches))) ⊙ SiLU(g)), the DWC and gate terms when enabled.
/// `dwc` and `gate` are independent switches (the paper's "+DWC+Gate" row sets both); only the DWC needs the
/// N-1 tokens after CLS to form a square grid.
class MitaAttention : public Attention {
 public:
  /// With `vit5` enabled: ViT-5's qkv (no bias), q/k norms and rotary embedding (Vit5Attention), landmarks and
  /// DWC over the patch tokens before the registers.
  MitaAttention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double proj_drop, Generator& gen,
                const Vit5Attention& vit5 = {});
  Tensor forward(const Tensor& x) const override;
  /// The same, filling `debug` with the selections and joint softmax weights of the core.
  Tensor forward(const Tensor& x, MitaDebug* debug) const;
  const MitaOptions& options() const { return opt_; }

  std::shared_ptr<nn::Linear> qkv;   // [3C, C]; null when gated
  std::shared_ptr<nn::Linear> qkvg;  // [4C, C]; only when gated
  std::shared_ptr<nn::Linear> proj;
  std::shared_ptr<DepthwiseConv3x3> dwc;  // only with dwc

 private:
  MitaOptions opt_;
  int64_t dim_;
  bool gate_;
  double proj_drop_;
};

/// Resolves cfg (k = 0 → m for mita, 2m for mita_route) and validates it, naming the model.attention key;
/// `registers` tokens after the patches are left out of the landmarks.
MitaOptions mita_options(const AttentionConfig& cfg, int64_t heads, int64_t registers = 0);

/// For make_attention: cfg.type must be a MiTA kind (AttentionConfig::is_mita).
std::shared_ptr<Attention> make_mita_attention(const AttentionConfig& cfg, int64_t dim, int64_t heads, double proj_drop,
                                               Generator& gen, const Vit5Attention& vit5 = {});

}  // namespace vt::models
