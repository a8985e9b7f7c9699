// Weight-decay parameter groups (timm's rule).
#include "optim/param_groups.h"

#include <array>

namespace vt::optim {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

bool no_weight_decay(const std::string& name, const Tensor& param) {
  if (param.dim() <= 1 || ends_with(name, ".bias")) return true;
  // timm matches the model's top-level names; matching the last component also covers wrapped models
  // ("backbone.pos_embed").
  const std::string last = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
  static const std::array<const char*, 4> kTokens = {"cls_token", "pos_embed", "dist_token", "reg_token"};
  for (const char* t : kTokens)
    if (last == t) return true;
  return false;
}

std::vector<ParamGroup> make_param_groups(const std::vector<std::pair<std::string, Tensor>>& named_params,
                                          double weight_decay) {
  ParamGroup no_decay{{}, 0.0}, decay{{}, weight_decay};
  for (const auto& [name, p] : named_params) {
    VT_CHECK(p.defined(), "[make_param_groups] parameter '", name, "' is undefined");
    if (!p.requires_grad()) continue;
    (no_weight_decay(name, p) ? no_decay : decay).params.push_back(p);
  }
  return {no_decay, decay};
}

}  // namespace vt::optim
