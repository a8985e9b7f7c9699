// Samplers: permutations, distributed coverage with and without padding, DeiT's repeated augmentation, and
// determinism from (seed, epoch).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "data/samplers.h"

namespace vt::test {
namespace {

TEST(Samplers, ShuffledOrderIsADeterministicPermutation) {
  const auto a = data::shuffled_order(1000, 3, 0);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(a, iota);
  EXPECT_EQ(a, data::shuffled_order(1000, 3, 0));
  EXPECT_NE(a, data::shuffled_order(1000, 3, 1));
  EXPECT_NE(a, data::shuffled_order(1000, 4, 0));
}

TEST(Samplers, DistributedCoversTheDatasetOnce) {
  const int64_t n = 103, world = 4;
  std::map<int64_t, int> seen;
  for (int64_t r = 0; r < world; ++r) {
    const auto idx = data::distributed_indices(n, {r, world, true, true, 9}, 2);
    EXPECT_EQ(idx.size(), 26u);  // ceil(103 / 4), padded
    for (int64_t i : idx) ++seen[i];
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
  int extra = 0;
  for (auto& [i, c] : seen) extra += c - 1;
  EXPECT_EQ(extra, 1);  // 104 - 103 padded
  seen.clear();
  size_t total = 0;
  for (int64_t r = 0; r < world; ++r) {
    const auto idx = data::distributed_indices(n, {r, world, false, false, 9}, 2);  // evaluation
    total += idx.size();
    for (int64_t i : idx) ++seen[i];
  }
  EXPECT_EQ(total, static_cast<size_t>(n));
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
  EXPECT_EQ(data::distributed_indices(n, {1, world, true, true, 9}, 2),
            data::distributed_indices(n, {1, world, true, true, 9}, 2));
}

TEST(Samplers, RepeatedAugmentationAsDeiT) {
  const int64_t n = 600, world = 2;
  std::map<int64_t, int> count;
  for (int64_t r = 0; r < world; ++r) {
    data::RepeatedAugOptions o;
    o.rank = r;
    o.world = world;
    o.seed = 1;
    const auto idx = data::repeated_aug_indices(n, o, 5);
    EXPECT_EQ(idx.size(), 256u);  // floor(600 // 256 * 256 / 2)
    for (int64_t i : idx) ++count[i];
    // Consecutive repeats go to different ranks: a rank sees the same image at most twice in a row of 3.
  }
  // The 512 draws cover the first 512 of the repeated order: 170 images 3 times, then one image twice.
  int threes = 0, others = 0;
  for (auto& [i, c] : count) (c == 3 ? threes : others) += 1;
  EXPECT_EQ(threes, 170);
  EXPECT_EQ(others, 1);
  // selected_round 0 keeps ceil(n / world) per rank.
  data::RepeatedAugOptions o;
  o.world = 3;
  o.selected_round = 0;
  EXPECT_EQ(data::repeated_aug_indices(100, o, 0).size(), 34u);
  EXPECT_EQ(data::repeated_aug_indices(100, o, 0), data::repeated_aug_indices(100, o, 0));
  EXPECT_NE(data::repeated_aug_indices(100, o, 0), data::repeated_aug_indices(100, o, 1));
}

}  // namespace
}  // namespace vt::test
