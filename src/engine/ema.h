// Exponential moving average of a model's weights, as timm's ModelEmaV2: after every optimizer update,
// ema = decay · ema + (1 - decay) · model for every state_dict tensor (parameters and buffers). The average
// lives in a second model of the same architecture (the "shadow"), so it can be evaluated and saved as is.
#pragma once
#include "nn/module.h"

namespace vt::engine {

class ModelEma {
 public:
  /// Keeps a reference to `shadow` (same architecture and device as `model`); when `copy_model`, first copies
  /// `model`'s state into it (a fresh EMA), else keeps shadow's weights (a resumed EMA).
  ModelEma(const nn::Module& model, nn::Module& shadow, double decay, bool copy_model = true);
  /// One EMA step from `model`'s current weights (no autograd; on the model's device).
  void update(const nn::Module& model);
  /// The model holding the averaged weights.
  nn::Module& shadow() { return shadow_; }
  double decay() const { return decay_; }

 private:
  nn::Module& shadow_;
  double decay_;
};

}  // namespace vt::engine
