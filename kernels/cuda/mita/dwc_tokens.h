// The depth-wise 3×3 conv (stride 1, zero padding 1) on token rows, channels last: the G×G patch grid is rows
// first .. first + G² − 1 of a [B, rows, C] operand whose channels are contiguous and whose rows and batches may be
// strided (a slice of the packed qkv). MiTA's DWC reads v this way and adds the conv to the attention output in
// place of the NCHW round trip (transpose, conv, transpose back, add, concat). f32 or bf16, f32 arithmetic.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// A [B, rows, C] operand: element (b, r, c) at data + b·batch + r·row + c.
struct TokenRows {
  const void* data = nullptr;
  int64_t batch = 0, row = 0;
};

/// dst = src + conv(x) on the grid rows (other rows copied): conv(x)[c] = bias[c] + Σ_taps w[c, tap]·x[neighbour],
/// taps flipped when `transposed` (the conv's input gradient, with bias null). dst and src contiguous [B, N, C]
/// (they may alias); weight [C, 9], bias [C] or null, in `dtype`.
void depthwise3x3_tokens(DType dtype, void* dst, const void* src, const TokenRows& x, const void* weight,
                         const void* bias, bool transposed, int64_t B, int64_t N, int64_t C, int64_t first, int64_t G,
                         KernelStream stream);

/// f32 scratch elements depthwise3x3_tokens_weight_grad needs.
int64_t depthwise3x3_tokens_scratch(int64_t B, int64_t C, int64_t G);

/// dweight [C, 9] = Σ_{b, p} g[b, p]·x[b, neighbour(p, tap)], dbias [C] = Σ g (either may be null; `dtype`), over
/// the grid rows of g and x; per-slice partials in `scratch`, summed in a fixed order (deterministic).
void depthwise3x3_tokens_weight_grad(DType dtype, void* dweight, void* dbias, const TokenRows& g, const TokenRows& x,
                                     int64_t B, int64_t C, int64_t first, int64_t G, float* scratch,
                                     KernelStream stream);

}  // namespace vt::kernels::cuda
