// Basic layers: Linear, LayerNorm, RMSNorm, PatchEmbed, Mlp. Parameter names follow timm/PyTorch. Linear, Conv2dPatch and
// LayerNorm follow the autocast policy (nn/autocast.h) on CUDA inputs.
#pragma once
#include <utility>

#include "core/rng.h"
#include "nn/module.h"

namespace vt::nn {

/// y = x Wᵀ + b. weight [out, in], bias [out]. Initialised with timm's trunc_normal(0.02) and zero bias.
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias, Generator& gen);
  /// Under autocast (CUDA x): x, weight and bias cast to the autocast dtype, output in it.
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;
};

/// A normalisation over the last dim with a weight [dim]: the ViT block's norm1, norm2 and final norm.
class Norm : public Module {
 public:
  virtual Tensor forward(const Tensor& x) const = 0;
  /// {h = x + y, forward(h)}: a residual add and this norm after it.
  virtual std::pair<Tensor, Tensor> forward_add(const Tensor& x, const Tensor& y) const = 0;
  Tensor weight;
};

/// LayerNorm over the last dim with f32 weight [dim] and bias [dim].
class LayerNorm : public Norm {
 public:
  LayerNorm(int64_t dim, double eps);
  /// Output in x's dtype, or in the autocast dtype under autocast (CUDA x); statistics are f32 either way.
  Tensor forward(const Tensor& x) const override;
  /// Fused on CUDA (ops::add_layer_norm).
  std::pair<Tensor, Tensor> forward_add(const Tensor& x, const Tensor& y) const override;
  Tensor bias;
  double eps;
};

/// RMSNorm over the last dim (ViT-5): weight · x / sqrt(mean(x²) + eps), weight [dim] initialised to ones, no
/// bias. Statistics in f32 for a bf16 x (as the official module's float32 upcast); output in x's dtype.
class RMSNorm : public Norm {
 public:
  RMSNorm(int64_t dim, double eps);
  Tensor forward(const Tensor& x) const override;
  std::pair<Tensor, Tensor> forward_add(const Tensor& x, const Tensor& y) const override;
  double eps;
};

/// Conv2d with stride = kernel = patch and no padding. weight [out, in, p, p], bias [out]; PyTorch's default init.
class Conv2dPatch : public Module {
 public:
  Conv2dPatch(int64_t in_chans, int64_t out, int64_t patch, Generator& gen);
  /// Under autocast (CUDA x): x, weight and bias cast to the autocast dtype, output in it.
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;
};

/// Image to patch tokens: Conv2d(in_chans, dim, kernel=stride=patch) as `proj`, then [B, N, dim].
class PatchEmbed : public Module {
 public:
  PatchEmbed(int64_t img_size, int64_t patch, int64_t in_chans, int64_t dim, Generator& gen);
  Tensor forward(const Tensor& x) const;  // [B, C, H, W] → [B, N, dim]
  int64_t grid() const { return img_size_ / patch_; }
  int64_t num_patches() const { return grid() * grid(); }
  std::shared_ptr<Conv2dPatch> proj;

 private:
  int64_t img_size_, patch_, in_chans_;
};

/// fc1 → GELU → dropout → fc2 → dropout.
class Mlp : public Module {
 public:
  Mlp(int64_t dim, int64_t hidden, double drop, Generator& gen);
  Tensor forward(const Tensor& x) const;
  std::shared_ptr<Linear> fc1, fc2;
  double drop;
};

}  // namespace vt::nn
