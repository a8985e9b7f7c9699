// Random fill kernels: one independent evaluation of the counter RNG per element, split over OpenMP threads.
#include "kernels/cpu/random.h"

#include "core/error.h"
#include "core/rng.h"

namespace vt::kernels::cpu {

namespace {

constexpr int64_t kParallelMin = 32768;

template <typename T, typename F>
void fill(T* out, int64_t n, F&& f) {
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(i));
}

template <typename T>
void masked_scale_impl(T* out, const T* in, const uint8_t* mask, int64_t rows, int64_t inner, T scale) {
#pragma omp parallel for if (rows * inner > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const T s = mask[r] ? scale : T(0);
    for (int64_t j = 0; j < inner; ++j) out[r * inner + j] = in[r * inner + j] * s;
  }
}

}  // namespace

void uniform_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double lo, double hi) {
  VT_DISPATCH_FLOAT(dtype, "uniform_", [&] {
    fill(static_cast<scalar_t*>(out), n,
         [=](int64_t i) { return lo + (hi - lo) * static_cast<double>(rng::uniform_at(seed, offset, i)); });
  });
}

void normal_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std) {
  VT_DISPATCH_FLOAT(dtype, "normal_", [&] {
    fill(static_cast<scalar_t*>(out), n,
         [=](int64_t i) { return mean + std * static_cast<double>(rng::normal_at(seed, offset, i)); });
  });
}

void trunc_normal_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std,
                       double a, double b) {
  VT_DISPATCH_FLOAT(dtype, "trunc_normal_", [&] {
    fill(static_cast<scalar_t*>(out), n,
         [=](int64_t i) { return rng::trunc_normal_at(seed, offset, i, mean, std, a, b); });
  });
}

void bernoulli_fill(uint8_t* out, int64_t n, uint64_t seed, uint64_t offset, double p) {
  fill(out, n, [=](int64_t i) { return static_cast<double>(rng::uniform_at(seed, offset, i)) < p ? 1 : 0; });
}

void masked_scale(DType dtype, void* out, const void* in, const uint8_t* mask, int64_t rows, int64_t inner,
                  double scale) {
  VT_DISPATCH_FLOAT(dtype, "masked_scale", [&] {
    masked_scale_impl(static_cast<scalar_t*>(out), static_cast<const scalar_t*>(in), mask, rows, inner,
                      static_cast<scalar_t>(scale));
  });
}

}  // namespace vt::kernels::cpu
