// ViT-5's rotary position embedding (the official MiTA-ViT-5 rope.py, VisionRotaryEmbedding with
// freqs_for 'lang'), as precomputed cos/sin tables and element-wise ops on rotated channel pairs.
//   A head of width d splits into two halves of d/2 channels: the first half rotates by the token's grid row, the
//   second by its column. In each half, channel pair (2j, 2j+1) turns by angle t·f_j, f_j = theta^(-2j/(d/2)),
//   t = the row (or column) index; the pair (x, y) becomes (x cos - y sin, y cos + x sin) (rope.py's rotate_half).
//   The token layout is [CLS, G×G patches row-major, R registers]: CLS is not rotated, the patches use theta 10000
//   on their G×G grid, the registers their own √R×√R grid with `register_theta` (ViT-5: 100).
#pragma once
#include <utility>

#include "tensor/tensor.h"

namespace vt::models {

/// The tables {cos, sin} [N, 1, d/2, 1] (f32) for N = 1 + G² + R tokens of head width d (a multiple of 4), for
/// apply_rotary. R must be a perfect square (0: no registers).
std::pair<Tensor, Tensor> rotary_tables(int64_t grid, int64_t registers, int64_t head_dim, double register_theta);

/// x [B, N, H, d] rotated pair by pair with the tables of rotary_tables (cast to x's dtype) → [B, N, H, d].
Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin);

}  // namespace vt::models
