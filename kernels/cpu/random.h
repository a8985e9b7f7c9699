// Random fills and mask kernels on contiguous buffers. Element i of a draw starting at `offset` is a pure
// function of (seed, offset, i) (see core/rng.h), so the result does not depend on the thread split.
// Used by ops::uniform_/normal_/trunc_normal_/bernoulli and the dropout family.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt::kernels::cpu {

void uniform_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double lo, double hi);
/// Uses uniforms 0..n (Box-Muller pairs), so the caller reserves n + 1 counters' worth of values.
void normal_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std);
void trunc_normal_fill(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std,
                       double a, double b);
/// out[i] = 1 if uniform_i < p else 0.
void bernoulli_fill(uint8_t* out, int64_t n, uint64_t seed, uint64_t offset, double p);
/// out[r, j] = in[r, j]·mask[r]·scale  (rows × inner; inner = 1 is an element-wise mask).
void masked_scale(DType dtype, void* out, const void* in, const uint8_t* mask, int64_t rows, int64_t inner,
                  double scale);

}  // namespace vt::kernels::cpu
