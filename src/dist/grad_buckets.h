// How data-parallel training cuts the optimizer's flat gradient buffer into buckets (torch DDP's Reducer layout):
// runs of consecutive parameters taken in reverse parameter order, since backward produces the last layers first,
// each closed once it holds bucket_bytes (DDP's default: 25 MB) and never spanning two parameter groups. Buckets
// are contiguous ranges of the flat buffer, so each is reduced in place with one collective.
#pragma once
#include <cstdint>
#include <vector>

#include "optim/flat_buffers.h"

namespace vt::dist {

struct GradBucket {
  int64_t begin = 0, end = 0;   // [begin, end) of the flat gradient buffer (padding included)
  std::vector<int64_t> params;  // the optimizer's parameter indices it holds, highest first
};

/// The buckets of `flat`, in launch order: sorted by the latest model position among their parameters' first
/// ones, i.e. by when backward completes them. `model_position[k]` is parameter k's index in the model's
/// definition order (empty: k itself); the sort is what keeps a small group of biases and norms, spread over the
/// whole model, from holding back the weight buckets that backward finishes early.
std::vector<GradBucket> make_grad_buckets(const optim::FlatBuffers& flat, int64_t bucket_bytes,
                                          const std::vector<int64_t>& model_position = {});

}  // namespace vt::dist
