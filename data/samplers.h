// The order in which an epoch visits a dataset, for one rank: pure functions of (seed, epoch), so every rank
// and every resumed run computes the same order without talking to the others.
#pragma once
#include <cstdint>
#include <vector>

namespace vt::data {

/// A permutation of 0..n-1 (Fisher-Yates over Philox counters of (seed, epoch)).
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch);

struct DistributedSamplerOptions {
  int64_t rank = 0, world = 1;
  bool shuffle = true;
  /// true (training, torch's DistributedSampler): pad by wrapping so every rank gets ceil(n/world) indices.
  /// false (evaluation): no sample twice; ranks get floor or ceil of n/world.
  bool pad = true;
  uint64_t seed = 0;
};

/// This rank's indices for `epoch`: the (shuffled) order, rank::world strided.
std::vector<int64_t> distributed_indices(int64_t n, const DistributedSamplerOptions& o, int64_t epoch);

struct RepeatedAugOptions {
  int64_t rank = 0, world = 1;
  int64_t repeats = 3;
  /// DeiT's RASampler keeps floor(n // 256 * 256 / world) per rank; 0 keeps ceil(n / world) (timm's option).
  int64_t selected_round = 256;
  bool shuffle = true;
  uint64_t seed = 0;
};

/// DeiT's RASampler: each index of the shuffled order repeated `repeats` times in a row, padded by wrapping to
/// a multiple of world, rank::world strided, then cut to the selected count, so each epoch sees about
/// 1/repeats of the distinct images, each `repeats` times across the ranks.
std::vector<int64_t> repeated_aug_indices(int64_t n, const RepeatedAugOptions& o, int64_t epoch);

}  // namespace vt::data
