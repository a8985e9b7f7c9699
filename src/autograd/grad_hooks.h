// Per-leaf "gradient accumulated" hooks: AccumulateGrad calls a leaf's hook right after it has added a backward
// gradient into the leaf's .grad, so data-parallel training can start reducing a gradient while backward goes on
// (torch's register_post_accumulate_grad_hook). Without hooks nothing changes. A leaf used by several ops in one
// graph gets one AccumulateGrad per use, so its hook runs once per use.
#pragma once
#include <functional>
#include <memory>

#include "tensor/tensor.h"

namespace vt {

/// Calls `hook` after each gradient accumulation into `leaf`'s .grad (replacing an earlier hook of that leaf);
/// an empty `hook` removes it. The hook runs on the thread running backward, under no-grad.
void set_post_accumulate_grad_hook(const Tensor& leaf, std::function<void()> hook);

/// Runs the hook registered for `leaf`, if any (called by AccumulateGrad).
void run_post_accumulate_grad_hook(const TensorImpl* leaf);

}  // namespace vt
