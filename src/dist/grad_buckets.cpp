// Bucket layout over the flat buffers; see grad_buckets.h.
#include "dist/grad_buckets.h"

#include <algorithm>

namespace vt::dist {

std::vector<GradBucket> make_grad_buckets(const optim::FlatBuffers& flat, int64_t bucket_bytes,
                                          const std::vector<int64_t>& model_position) {
  VT_CHECK(bucket_bytes > 0, "[grad_buckets] bucket size must be > 0 bytes, got ", bucket_bytes);
  const int64_t n = flat.num_params();
  VT_CHECK(model_position.empty() || static_cast<int64_t>(model_position.size()) == n, "[grad_buckets] ",
           model_position.size(), " model positions for ", n, " parameters");
  auto end_of = [&](int64_t k) { return k + 1 < n ? flat.offset(k + 1) : flat.size(); };
  auto position = [&](int64_t k) { return model_position.empty() ? k : model_position[static_cast<size_t>(k)]; };
  const int64_t elem = static_cast<int64_t>(dtype_size(flat.dtype()));

  std::vector<GradBucket> buckets;
  int64_t group_first = 0;  // first parameter of the current group
  for (const auto& [group_end, decay] : flat.group_ends()) {
    int64_t last = group_first;  // one past the group's last parameter
    while (last < n && flat.offset(last) < group_end) ++last;
    GradBucket b;
    for (int64_t k = last - 1; k >= group_first; --k) {
      if (b.params.empty()) b.end = end_of(k);
      b.begin = flat.offset(k);
      b.params.push_back(k);
      if ((b.end - b.begin) * elem >= bucket_bytes) buckets.push_back(std::exchange(b, GradBucket{}));
    }
    if (!b.params.empty()) buckets.push_back(std::move(b));
    group_first = last;
  }
  // Backward runs the model roughly last layer first: a bucket is complete when its earliest-defined parameter
  // has its gradient, so later-complete buckets (smaller minimum position) go later.
  auto min_position = [&](const GradBucket& b) {
    int64_t m = position(b.params.front());
    for (int64_t k : b.params) m = std::min(m, position(k));
    return m;
  };
  std::stable_sort(buckets.begin(), buckets.end(),
                   [&](const GradBucket& a, const GradBucket& b) { return min_position(a) > min_position(b); });
  return buckets;
}

}  // namespace vt::dist
