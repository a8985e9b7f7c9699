// timm's weight-decay split (param_groups_weight_decay): no decay for 1-D (and 0-D) parameters such as norm
// weights, for biases, and for the tokens and position embedding of model.no_weight_decay().
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "optim/optimizer.h"

namespace vt::optim {

/// True when `name`/`param` is exempt from weight decay: dim() <= 1, a name ending in ".bias", or a last name
/// component of cls_token, pos_embed, dist_token or reg_token.
bool no_weight_decay(const std::string& name, const Tensor& param);

/// Two groups in timm's order: {no-decay params, weight_decay 0}, {the rest, weight_decay}. Parameters that do
/// not require grad are left out.
std::vector<ParamGroup> make_param_groups(const std::vector<std::pair<std::string, Tensor>>& named_params,
                                          double weight_decay);

}  // namespace vt::optim
