// Random numbers for one sample's augmentations: a Philox stream keyed by (seed, epoch, position), so what a
// sample gets does not depend on which worker thread draws it or when.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/rng.h"

namespace vt::data {

class SampleRng {
 public:
  /// The stream of the sample at `position` of `epoch`'s order (stream = rank or any other salt).
  SampleRng(uint64_t seed, int64_t epoch, int64_t position, uint64_t stream = 0)
      : key_(mix(mix(mix(seed) ^ static_cast<uint64_t>(epoch)) ^ stream) ^ static_cast<uint64_t>(position)) {}
  /// Uniform in (0, 1).
  double uniform() { return (static_cast<double>(bits() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Integer uniform in [lo, hi] (both inclusive, like Python's random.randint).
  int64_t randint(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(bits() % static_cast<uint64_t>(hi - lo + 1));
  }
  /// Standard normal (Box-Muller; the sine half of each pair is kept for the next call).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = uniform(), u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1)), t = 6.283185307179586 * u2;
    spare_ = r * std::sin(t);
    has_spare_ = true;
    return r * std::cos(t);
  }
  /// True with probability p.
  bool bernoulli(double p) { return uniform() < p; }
  /// 64 random bits.
  uint64_t bits() {
    const rng::U32x4 r = rng::philox4x32(key_, counter_++);
    return (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
  }

 private:
  // splitmix64's finaliser: spreads nearby (seed, epoch, position) triples over unrelated keys.
  static uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t key_;
  uint64_t counter_ = 0;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace vt::data
