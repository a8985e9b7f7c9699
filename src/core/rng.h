// Counter-based random numbers (Philox4x32-10, Salmon et al. 2011). A value is a pure function of
// (seed, counter), so a CPU loop and a GPU thread that compute element i get the same number, whatever the
// thread layout. Element i of a draw that starts at `offset` uses counter offset + i/4 and lane i%4.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define VT_HD __host__ __device__ __forceinline__
#else
#define VT_HD inline
#endif

namespace vt::rng {

struct U32x4 {
  uint32_t v[4];
};

VT_HD U32x4 philox4x32(uint64_t seed, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

VT_HD uint32_t bits_at(uint64_t seed, uint64_t offset, uint64_t i) { return philox4x32(seed, offset + i / 4).v[i % 4]; }

/// Uniform in (0, 1): 24 random bits, centred in their bin so 0 and 1 never occur. The top bin's centre
/// (2^24 - 0.5) is not a float and rounds to 2^24, so it is mapped to the largest float below 1 instead.
VT_HD float uniform_at(uint64_t seed, uint64_t offset, uint64_t i) {
  const float u = (static_cast<float>(bits_at(seed, offset, i) >> 8) + 0.5f) * (1.0f / 16777216.0f);
  return u < 1.0f ? u : 0.99999994f;
}

/// Standard normal by Box-Muller over the pair (2j, 2j+1) of uniforms; element i takes the cos or sin branch.
VT_HD float normal_at(uint64_t seed, uint64_t offset, uint64_t i) {
  uint64_t pair = i / 2;
  float u1 = uniform_at(seed, offset, 2 * pair), u2 = uniform_at(seed, offset, 2 * pair + 1);
  float r = std::sqrt(-2.0f * std::log(u1));
  float t = 6.28318530717958647692f * u2;
  return (i % 2 == 0) ? r * std::cos(t) : r * std::sin(t);
}

/// Inverse error function (Giles 2010 single-precision approximation, one Newton step in double).
VT_HD double erfinv(double x) {
  double w = -std::log((1.0 - x) * (1.0 + x)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * x;
  // Newton: f(y) = erf(y) - x, f' = 2/sqrt(pi) exp(-y^2)
  y -= (std::erf(y) - x) / (1.1283791670955126 * std::exp(-y * y));
  return y;
}

/// Normal(mean, std) truncated to [a, b] by inverting the CDF, as timm's trunc_normal_.
VT_HD double trunc_normal_at(uint64_t seed, uint64_t offset, uint64_t i, double mean, double std, double a, double b) {
  auto cdf = [](double x) { return 0.5 * (1.0 + std::erf(x / 1.4142135623730951)); };
  double lo = cdf((a - mean) / std), hi = cdf((b - mean) / std);
  double u = lo + (hi - lo) * uniform_at(seed, offset, i);
  double x = erfinv(2.0 * u - 1.0) * 1.4142135623730951 * std + mean;
  return x < a ? a : (x > b ? b : x);
}

}  // namespace vt::rng

namespace vt {

/// A seed and a running offset. Each draw reserves a block of counters so later draws never reuse them;
/// saving (seed, offset) is enough to resume the stream exactly.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_state(uint64_t seed, uint64_t offset) {
    seed_ = seed;
    offset_ = offset;
  }
  /// Reserves counters for n values; returns the offset where the draw starts.
  uint64_t reserve(uint64_t n) {
    uint64_t start = offset_;
    offset_ += (n + 3) / 4;
    return start;
  }
  /// While a CUDA graph is captured: a device u64 that device draws add to their offset when they run, so each replay
  /// draws fresh numbers (engine/graph_step.h writes it before every replay). nullptr otherwise.
  const uint64_t* device_shift() const { return device_shift_; }
  void set_device_shift(const uint64_t* shift) { device_shift_ = shift; }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
  const uint64_t* device_shift_ = nullptr;
};

/// The process-wide generator used when an op is not given one explicitly.
Generator& default_generator();

}  // namespace vt
