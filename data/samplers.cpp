#include "data/samplers.h"

#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace vt::data {
namespace {

void check_rank(int64_t rank, int64_t world) {
  VT_CHECK(world >= 1 && rank >= 0 && rank < world, "[data] sampler: rank ", rank, " of world ", world);
}

std::vector<int64_t> base_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch) {
  if (shuffle) return shuffled_order(n, seed, epoch);
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  return idx;
}

}  // namespace

std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch) {
  VT_CHECK(n >= 0, "[data] sampler: negative dataset size");
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  const uint64_t key = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch) + 0x5A3Bull;
  for (int64_t i = n - 1; i > 0; --i) {
    const rng::U32x4 r = rng::philox4x32(key, static_cast<uint64_t>(i));
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    std::swap(idx[i], idx[bits % static_cast<uint64_t>(i + 1)]);
  }
  return idx;
}

std::vector<int64_t> distributed_indices(int64_t n, const DistributedSamplerOptions& o, int64_t epoch) {
  check_rank(o.rank, o.world);
  std::vector<int64_t> order = base_order(n, o.shuffle, o.seed, epoch);
  if (o.pad && n > 0) {
    const int64_t total = (n + o.world - 1) / o.world * o.world;
    for (int64_t i = n; i < total; ++i) order.push_back(order[(i - n) % n]);
  }
  std::vector<int64_t> out;
  for (size_t i = static_cast<size_t>(o.rank); i < order.size(); i += static_cast<size_t>(o.world))
    out.push_back(order[i]);
  return out;
}

std::vector<int64_t> repeated_aug_indices(int64_t n, const RepeatedAugOptions& o, int64_t epoch) {
  check_rank(o.rank, o.world);
  VT_CHECK(o.repeats >= 1, "[data] repeated augmentation needs repeats >= 1");
  if (n == 0) return {};
  const std::vector<int64_t> order = base_order(n, o.shuffle, o.seed, epoch);
  const int64_t per_rank = (n * o.repeats + o.world - 1) / o.world, total = per_rank * o.world;
  std::vector<int64_t> repeated;
  repeated.reserve(static_cast<size_t>(total));
  for (int64_t v : order)
    for (int64_t r = 0; r < o.repeats; ++r) repeated.push_back(v);
  const int64_t unpadded = static_cast<int64_t>(repeated.size());
  for (int64_t i = unpadded; i < total; ++i) repeated.push_back(repeated[i - unpadded]);
  const int64_t selected =
      o.selected_round > 0 ? n / o.selected_round * o.selected_round / o.world : (n + o.world - 1) / o.world;
  std::vector<int64_t> out;
  for (int64_t i = o.rank; i < total && static_cast<int64_t>(out.size()) < selected; i += o.world)
    out.push_back(repeated[i]);
  return out;
}

}  // namespace vt::data
