// ModelEmaV2 update: one scaled copy and two in-place ops per tensor.
#include "engine/ema.h"

#include "autograd/node.h"
#include "core/error.h"
#include "ops/ops.h"

namespace vt::engine {

ModelEma::ModelEma(const nn::Module& model, nn::Module& shadow, double decay, bool copy_model)
    : shadow_(shadow), decay_(decay) {
  VT_CHECK(decay > 0 && decay < 1, "[ema] decay must be in (0, 1), got ", decay);
  NoGradGuard no_grad;
  if (copy_model) shadow_.load_state_dict(model.state_dict());
  shadow_.eval();
}

void ModelEma::update(const nn::Module& model) {
  NoGradGuard no_grad;
  const auto src = model.state_dict();
  const auto dst = shadow_.state_dict();
  VT_CHECK(src.size() == dst.size(), "[ema] the model has ", src.size(), " tensors, the EMA ", dst.size());
  for (size_t i = 0; i < src.size(); ++i) {
    VT_CHECK(src[i].first == dst[i].first, "[ema] tensor ", i, " is '", src[i].first, "' in the model but '",
             dst[i].first, "' in the EMA");
    if (!is_floating(dst[i].second.dtype())) {
      dst[i].second.copy_(src[i].second);  // integer buffers are copied, as timm does
      continue;
    }
    // timm: ema_v.copy_(ema_v * decay + (1 - decay) * model_v)
    const Tensor scaled = ops::mul(src[i].second.detach(), 1.0 - decay_);
    ops::mul_(dst[i].second, decay_);
    ops::add_(dst[i].second, scaled);
  }
}

}  // namespace vt::engine
