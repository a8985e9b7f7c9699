// ModelEmaV2 update: one scaled copy and two in-place ops per tensor; or, fused, the parameters averaged inside the
// optimizer's update over a flat shadow buffer.
#include "engine/ema.h"

#include <algorithm>

#include "autograd/node.h"
#include "core/error.h"
#include "ops/ops.h"
#include "optim/flat_buffers.h"
#include "optim/optimizer.h"

namespace vt::engine {

ModelEma::ModelEma(const nn::Module& model, nn::Module& shadow, double decay, bool copy_model)
    : shadow_(shadow), decay_(decay) {
  VT_CHECK(decay > 0 && decay < 1, "[ema] decay must be in (0, 1), got ", decay);
  NoGradGuard no_grad;
  if (copy_model) shadow_.load_state_dict(model.state_dict());
  shadow_.eval();
}

bool ModelEma::fuse_into(optim::Optimizer& opt, const nn::Module& model) {
  const optim::FlatBuffers* flat = opt.flat();
  if (fused() || !flat || !opt.can_fuse_ema() || flat->size() == 0) return false;
  const auto src = model.named_parameters();
  const auto dst = shadow_.named_parameters();
  if (src.size() != dst.size() || static_cast<int64_t>(src.size()) != flat->num_params()) return false;
  // Shadow parameter i takes the flat slot of the optimizer's parameter that is model parameter i.
  std::vector<int64_t> slot(src.size());
  std::vector<char> taken(src.size(), 0);
  for (size_t i = 0; i < src.size(); ++i) {
    const int64_t k = flat->index_of(&src[i].second.impl());
    if (k < 0 || taken[static_cast<size_t>(k)] || src[i].first != dst[i].first) return false;
    const Tensor& s = dst[i].second;
    if (s.shape() != src[i].second.shape() || s.dtype() != flat->dtype() || s.device() != flat->device()) return false;
    taken[static_cast<size_t>(k)] = 1;
    slot[i] = k;
  }
  NoGradGuard no_grad;
  Tensor buffer = flat->new_buffer();  // the padding between slots stays zero, as in the parameter buffer
  for (size_t i = 0; i < dst.size(); ++i) flat->repoint(dst[i].second, buffer, slot[i]);
  opt.set_ema(buffer, decay_);
  for (const auto& [name, t] : dst) fused_params_.push_back(&t.impl());
  std::sort(fused_params_.begin(), fused_params_.end());
  return true;
}

void ModelEma::update(const nn::Module& model) {
  NoGradGuard no_grad;
  const auto src = model.state_dict();
  const auto dst = shadow_.state_dict();
  VT_CHECK(src.size() == dst.size(), "[ema] the model has ", src.size(), " tensors, the EMA ", dst.size());
  for (size_t i = 0; i < src.size(); ++i) {
    VT_CHECK(src[i].first == dst[i].first, "[ema] tensor ", i, " is '", src[i].first, "' in the model but '",
             dst[i].first, "' in the EMA");
    if (std::binary_search(fused_params_.begin(), fused_params_.end(), &dst[i].second.impl()))
      continue;  // averaged by the optimizer's update
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
