// Exponential moving average of a model's weights, as timm's ModelEmaV2: after every optimizer update,
// ema = decay · ema + (1 - decay) · model for every state_dict tensor (parameters and buffers). The average
// lives in a second model of the same architecture (the "shadow"), so it can be evaluated and saved as is.
//
// Fused mode (fuse_into): when the optimizer keeps the model's parameters in flat buffers, the shadow's parameters
// move into one flat buffer of the same layout and the optimizer's update launch averages them right after writing
// each new parameter value (bit-identical to update(): same f32 ops, same rounding). update() then only averages the
// remaining state_dict tensors (buffers; a ViT has none, so it launches nothing). The shadow stays a normal module.
#pragma once
#include <vector>

#include "nn/module.h"

namespace vt::optim {
class Optimizer;
}

namespace vt::engine {

class ModelEma {
 public:
  /// Keeps a reference to `shadow` (same architecture and device as `model`); when `copy_model`, first copies
  /// `model`'s state into it (a fresh EMA), else keeps shadow's weights (a resumed EMA).
  ModelEma(const nn::Module& model, nn::Module& shadow, double decay, bool copy_model = true);
  /// One EMA step from `model`'s current weights (no autograd; on the model's device); in fused mode only of the
  /// tensors the optimizer does not average (non-parameters).
  void update(const nn::Module& model);
  /// Moves the parameter average into `opt`'s update (Optimizer::set_ema) when `opt` has flat buffers over exactly
  /// `model`'s parameters and can fuse (AdamW without a ZeRO-1 range); the shadow's parameters become views of one
  /// flat buffer with the optimizer's layout, keeping their values. Returns false, and stays unfused, otherwise.
  /// Call it once the optimizer's layout is final (after DataParallel's set-up), before the next step.
  bool fuse_into(optim::Optimizer& opt, const nn::Module& model);
  /// True after a successful fuse_into().
  bool fused() const { return !fused_params_.empty(); }
  /// The model holding the averaged weights.
  nn::Module& shadow() { return shadow_; }
  double decay() const { return decay_; }

 private:
  nn::Module& shadow_;
  double decay_;
  std::vector<const TensorImpl*> fused_params_;  // shadow parameters the optimizer averages (sorted)
};

}  // namespace vt::engine
