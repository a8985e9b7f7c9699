// The two halves of fused MiTA (docs/mita-spec.md §2.3, s = 1): the discrete routing (no gradient) and the
// joint-softmax attention over [m shared ∪ k routed] slots (one autograd node). models/mita.cpp composes them
// with the landmark pooling and the V̂ attention; its op-by-op composite stays the oracle they are tested against.
//
// Operands are head-split views [B, H, rows, d] (any strides, typically views of a packed qkv); results that are
// [B, H, N, d] are laid out [B, N, H, d] in memory, so transpose(1, 2).reshape({B, N, H·d}) is free.
// Index tensors are i32 on the operands' device. Nothing here synchronises the host.
#pragma once
#include "tensor/tensor.h"

namespace vt::ops {

/// Which keys each expert owns and which expert each query goes to, per (batch, head).
struct MitaRouting {
  Tensor expert_keys;  ///< [B, H, m, k] i32: I_j, the k keys with the largest r_j·k_n (ties: lower n), ascending
  Tensor experts;      ///< [B, H, N] i32: e(n) = argmax_j r_j·q_n (first j on ties)
  Tensor order;        ///< [B, H, N] i32: queries sorted by expert, ascending n within an expert
  Tensor offsets;      ///< [B, H, m + 1] i32: expert j's queries are order[offsets[j] .. offsets[j + 1])
};

/// True when mita_route / mita_attention / mita_landmark_pool have kernels for `dtype` operands with head dim
/// `head_dim` on `device` (CPU: f32, f64; CUDA: f32, bf16 with head dims 16, 32, 64, 128; head_dim ≤ 0: the
/// dtype alone, as for mita_landmark_pool).
bool mita_fused_supports(DType dtype, Device device, int64_t head_dim);

/// Routing from the unscaled scores r·kᵀ (top-k per landmark) and r·qᵀ (arg-max per query), computed in f32
/// (f64 for f64 inputs). q, k [B, H, N, d], landmarks [B, H, m, d], same dtype (f32/f64 on CPU, f32/bf16 on CUDA).
MitaRouting mita_route(const Tensor& q, const Tensor& k, const Tensor& landmarks, int64_t topk);

/// V̂ = softmax(scale·landmarks·kᵀ)·v, the shared branch's values: landmarks [B, H, m, d], k, v [B, H, N, d] →
/// [B, H, m, d]. CUDA bf16 when no gradient is recorded: a split-key tensor-core kernel; otherwise the composite
/// matmul → softmax → matmul (logits in f32 also for bf16 operands), differentiable.
Tensor mita_shared_values(const Tensor& landmarks, const Tensor& k, const Tensor& v, double scale);

/// Inference on long sequences: mita_route and mita_shared_values together in one pass over the keys that never
/// stores the [m, N] score matrix (kernels/cuda/mita/mita.h: the V̂ kernel collects each landmark's top-k candidates).
/// Applies on CUDA to bf16 operands the tensor-core kernels can read, N ≥ 16384 and a multiple of 4096, with no
/// gradient recorded; returns false (and does nothing) otherwise. Same routing rule as mita_route.
bool mita_route_with_values(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& landmarks, int64_t topk,
                            double scale, MitaRouting& routing, Tensor& v_hat);

struct MitaAttentionOptions {
  double scale = 1.0;          ///< routed logits: scale·q·k (1/√d)
  double shared_scale = 1.0;   ///< shared logits: shared_scale·q·r (official 1/d)
  bool shared = true;          ///< false: route-only (softmax over the k routed slots alone; landmarks, v_hat unused)
  bool deterministic = false;  ///< CUDA backward without float atomics (same bits run to run); CPU always is
};

/// o_n = Σ softmax([shared_scale·q_n·R ; scale·q_n·K_I]) · [V̂ ; V_I] with I = expert_keys[e(n)], per (b, h).
/// q, k, v [B, H, N, d]; landmarks, v_hat [B, H, m, d]; all one float dtype (CUDA bf16: f32 accumulation and
/// softmax statistics, bf16 output). Differentiable in q, k, v, landmarks and v_hat; the routing is fixed.
/// Returns [B, H, N, d] laid out [B, N, H, d].
Tensor mita_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& landmarks, const Tensor& v_hat,
                      const MitaRouting& routing, const MitaAttentionOptions& options);

/// Which tokens MiTA pools into its m landmarks (experts): tokens first .. first + tokens - 1; with grid G > 0 they
/// are a row-major G×G grid pooled 2-D to pool × pool = m landmarks (landmark j = row·pool + col), with grid 0 they
/// are pooled 1-D into m bins. Bins are PyTorch's adaptive ones, so they may overlap. Built and checked once, by
/// make(); passed unchanged to the pooling op, the packed-qkv path and their kernels.
class MitaLandmarkLayout {
 public:
  /// Throws "[mita_landmark_pool] ..." when the layout is impossible: m < 1, first < 0, tokens < 1, a grid that is
  /// not tokens = G², or 2-D pooling with m not a perfect square.
  static MitaLandmarkLayout make(int64_t first, int64_t tokens, int64_t grid, int64_t m);
  MitaLandmarkLayout() = default;  ///< no layout (m() == 0): the ops refuse it
  int64_t first() const { return first_; }
  int64_t tokens() const { return tokens_; }
  int64_t grid() const { return grid_; }  ///< G (2-D), or 0 (1-D)
  int64_t pool() const { return pool_; }  ///< p = √m (2-D), or 0 (1-D)
  int64_t m() const { return m_; }

 private:
  int64_t first_ = 0, tokens_ = 0, grid_ = 0, pool_ = 0, m_ = 0;
};

struct MitaQkvOptions {
  int64_t heads = 1;
  MitaLandmarkLayout landmarks;    ///< the m landmarks and the tokens they pool
  int64_t topk = 25;               ///< keys per expert
  MitaAttentionOptions attention;  ///< scale (also V̂'s), shared_scale, shared (false: route-only), deterministic
  bool gate = false;               ///< the input is qkvg [B, N, 4C] and the result is multiplied by SiLU(g)
};

/// The training path of the whole fused MiTA core (s = 1) on the packed projection qkv [B, N, 3C] (q, k, v at
/// channels 0, C, 2C: timm's layout; rows may be strided, channels contiguous) → [B, N, C]: landmarks R0 pooled
/// from q, the routing (`fixed` when given), V̂ = softmax(scale·R·Kᵀ)·V in f32 (f64 for f64), the joint attention.
/// The same values and gradients as mita_landmark_pool + mita_route + mita_shared_values + mita_attention on the
/// three slices, but one autograd node: its backward assembles d(qkv) once (one concat of [B, N, C] sums) instead
/// of three slice gradients, each a zero [B, N, 3C] tensor plus a strided copy, summed. `used` receives the routing.
/// With `dwc_weight` [C, 1, 3, 3] and `dwc_bias` [C] (qkv's dtype; both or neither) it also adds MiTA's DWC to
/// tokens 1..N-1: depthwise_conv2d (3×3) of v's patch tokens as a G×G grid (N - 1 = G²), in the same node; with
/// options.gate, qkvg [B, N, 4C] and the result (after the DWC) times SiLU(g), MiTA's gate.
Tensor mita_qkv_attention(const Tensor& qkv, const MitaQkvOptions& options, const Tensor& dwc_weight = {},
                          const Tensor& dwc_bias = {}, const MitaRouting* fixed = nullptr, MitaRouting* used = nullptr);

/// True when mita_qkv_attention(qkv, options) runs the whole core as one kernel each way (CUDA bf16, short N:
/// kernels/cuda/mita/mita_small.h), which also serves inference: one launch instead of the routing and attention ops.
bool mita_qkv_one_kernel(const Tensor& qkv, const MitaQkvOptions& options);

/// MiTA's landmarks R0 [B, m, C] (x's dtype): the mean of x[b, first + t, :] over each bin of `layout`.
/// x [B, N, C] is read in place when its channels are contiguous (a view of the packed qkv). Differentiable in x:
/// dx [B, N, C] in x's dtype, 0 outside the tokens.
Tensor mita_landmark_pool(const Tensor& x, const MitaLandmarkLayout& layout);
/// The same with MitaLandmarkLayout::make(first, L, grid, m).
Tensor mita_landmark_pool(const Tensor& x, int64_t first, int64_t L, int64_t grid, int64_t m);

}  // namespace vt::ops
