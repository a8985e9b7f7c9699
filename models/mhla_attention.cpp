// MHLA as a composition of differentiable ops (autograd supplies the backward). See the header.
#include "models/mhla_attention.h"

#include <cmath>
#include <utility>
#include <vector>

#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::models {

namespace {

constexpr int64_t kBlock = 4;      // tokens per block side (the official piece size)
constexpr double kNormEps = 1e-5;  // nn.LayerNorm's default
constexpr double kKernelEps = 1e-6;

// The grid side G of N = G² tokens when G is a multiple of kBlock with at least two blocks a side, else 0.
int64_t block_grid(int64_t tokens) {
  const int64_t G = square_side(tokens);
  return G >= 2 * kBlock && G % kBlock == 0 ? G : 0;
}

// [B, G·G, C] row-major ↔ [B, P, 16, C] block by block (blocks row-major, tokens row-major inside a block).
Tensor to_blocks(const Tensor& t, int64_t G) {
  const int64_t B = t.size(0), C = t.size(2), b = G / kBlock;
  return t.reshape({B, b, kBlock, b, kBlock, C}).permute({0, 1, 3, 2, 4, 5}).reshape({B, b * b, kBlock * kBlock, C});
}
Tensor from_blocks(const Tensor& t, int64_t G) {
  const int64_t B = t.size(0), C = t.size(3), b = G / kBlock;
  return t.reshape({B, b, b, kBlock, kBlock, C}).permute({0, 1, 3, 2, 4, 5}).reshape({B, G * G, C});
}

// Hold the mixing matrix so its key reads piece_attn.conv.weight, as the official BlockDistanceConv's.
struct PieceConv : nn::Module {
  explicit PieceConv(Tensor w) { weight = register_parameter("weight", std::move(w)); }
  Tensor weight;
};
struct PieceAttn : nn::Module {
  explicit PieceAttn(Tensor w) { conv = register_module("conv", std::make_shared<PieceConv>(std::move(w))); }
  std::shared_ptr<PieceConv> conv;
};

}  // namespace

Tensor mhla_block_mixing_init(int64_t grid, DType dtype) {
  VT_CHECK(grid >= 2 * kBlock && grid % kBlock == 0, "[mhla] the token grid side ", grid,
           " must be a multiple of 4 with at least two 4x4 blocks a side");
  const int64_t b = grid / kBlock, P = b * b;
  std::vector<double> dist(static_cast<size_t>(P * P));
  double max_dist = 0;
  for (int64_t i = 0; i < P; ++i)
    for (int64_t j = 0; j < P; ++j) {  // block centres at (row + 0.5, col + 0.5)
      const double dy = static_cast<double>(i / b - j / b), dx = static_cast<double>(i % b - j % b);
      dist[i * P + j] = std::sqrt(dy * dy + dx * dx);
      max_dist = std::max(max_dist, dist[i * P + j]);
    }
  std::vector<double> m(dist.size()), col(static_cast<size_t>(P), 0.0);
  for (size_t e = 0; e < m.size(); ++e) m[e] = std::cos(dist[e] / max_dist * M_PI / 4);
  for (int64_t i = 0; i < P; ++i)
    for (int64_t j = 0; j < P; ++j) col[j] += m[i * P + j];
  for (int64_t i = 0; i < P; ++i)
    for (int64_t j = 0; j < P; ++j) m[i * P + j] /= col[j];
  return Tensor::from_vector(m, {P, P, 1, 1}, dtype);
}

Tensor mhla_attention(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b, const Tensor& qkv_w,
                      const Tensor& qkv_b, const Tensor& piece_w, const Tensor& proj_w, const Tensor& proj_b,
                      int64_t heads) {
  VT_CHECK(x.dim() == 3, "[mhla] x must be [B, N, C], got ", x.describe());
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2), G = block_grid(N);
  VT_CHECK(heads > 0 && C % heads == 0, "[mhla] C = ", C, " is not divisible by ", heads, " heads");
  VT_CHECK(G > 0, "[mhla] N = ", N, " tokens are not a square grid of 4x4 blocks (G x G, G a multiple of 4, >= 8)");
  const int64_t d = C / heads, P = (G / kBlock) * (G / kBlock), W = kBlock * kBlock;
  VT_CHECK(piece_w.shape() == Shape({P, P, 1, 1}), "[mhla] piece_attn.conv.weight ", piece_w.describe(),
           " does not fit ", P, " blocks (", G, "x", G, " tokens)");
  Tensor qkv = to_blocks(nn::autocast_linear(ops::layer_norm(x, norm_w, norm_b, kNormEps), qkv_w, qkv_b), G);
  // [B, P, W, 3C] → q, k, v per head: [B, H, P, W, d]
  auto heads_of = [&](int64_t which) {
    return qkv.slice(3, which * C, (which + 1) * C).reshape({B, P, W, heads, d}).permute({0, 3, 1, 2, 4});
  };
  Tensor q = ops::relu(heads_of(0)) + kKernelEps, k = ops::relu(heads_of(1)) + kKernelEps, v = heads_of(2);
  Tensor states = ops::matmul(k.transpose(-2, -1), v).reshape({B, heads, P, d * d});  // S_p, flattened
  Tensor mixed = ops::matmul(nn::cast_to(piece_w.reshape({P, P}), states.dtype()), states);
  Tensor out = ops::matmul(q, mixed.reshape({B, heads, P, d, d}));  // [B, H, P, W, d]
  out = from_blocks(out.permute({0, 2, 3, 1, 4}).reshape({B, P, W, C}), G);
  return nn::autocast_linear(out, proj_w, proj_b);
}

MhlaAttention::MhlaAttention(int64_t dim, int64_t heads, int64_t tokens, double proj_drop, Generator& gen)
    : heads_(heads), proj_drop_(proj_drop) {
  VT_CHECK(heads > 0 && dim % heads == 0, "[model] embed_dim ", dim, " is not divisible by num_heads ", heads);
  const int64_t G = block_grid(tokens);
  VT_CHECK(G > 0, "[model] model.attention.type 'mhla' needs the tokens to be a G x G grid without a CLS token, ",
           "G a multiple of 4 and >= 8 (the official MHLA-DeiT drops the CLS token and pads 224² images to 256²: ",
           "16 x 16 patches), got N = ", tokens, " tokens");
  // In the official state_dict's order: norm, qkv (to_qkv), piece_attn, proj (to_out.0).
  norm = register_module("norm", std::make_shared<nn::LayerNorm>(dim, kNormEps));
  qkv = register_module("qkv", std::make_shared<nn::Linear>(dim, 3 * dim, true, gen));
  init_linear_pytorch_default(*qkv, gen);
  piece_weight =
      register_module("piece_attn", std::make_shared<PieceAttn>(mhla_block_mixing_init(G, DType::f32)))->conv->weight;
  proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim, true, gen));
  init_linear_pytorch_default(*proj, gen);
}

Tensor MhlaAttention::forward(const Tensor& x) const {
  Tensor out = mhla_attention(x, norm->weight, norm->bias, qkv->weight, qkv->bias, piece_weight, proj->weight,
                              proj->bias, heads_);
  return ops::dropout(out, proj_drop_, training());
}

}  // namespace vt::models
