// The parameter structs and op names that a CPU kernel and its CUDA twin share: one definition each, read by
// kernels/cpu and kernels/cuda alike (both namespaces sit inside vt::kernels, so they name these unqualified).
// Plain data only; no CUDA headers.
#pragma once
#include <cstdint>

namespace vt::kernels {

// ---------------------------------------------------------------- element-wise
enum class BinaryOp { add, sub, mul, div };
enum class UnaryOp { exp, log, sqrt, rsqrt, tanh, sigmoid, gelu, silu, square, neg, relu };

// ---------------------------------------------------------------- segmentation
/// planes = B·C images of in_h × in_w resized to out_h × out_w; all contiguous.
struct BilinearShape {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
};

/// Logits [B, K, P] and targets [B, P] (P = H·W pixels), both contiguous.
struct PixelCeShape {
  int64_t B = 0, K = 0, P = 0;
  int64_t ignore_index = 255;
};

// ---------------------------------------------------------------- attention
/// A [B, H, rows, d] operand: element (b, h, r, c) at data[b·batch_stride + h·head_stride + r·row_stride + c]
/// (strides in elements, the last dim contiguous). Inputs and outputs alike: an output's `data` is written.
struct AttentionView {
  const void* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
};

/// Sizes of a dense attention launch.
struct AttentionShape {
  int64_t B = 0, H = 0, N = 0, d = 0;
  float scale = 1.0f;  // the logits are scale·q·kᵀ
  int64_t N_kv = 0;    // key/value rows when they differ from the N query rows (0: N, self-attention)
  int64_t kv_rows() const { return N_kv > 0 ? N_kv : N; }
};

// ---------------------------------------------------------------- MiTA
/// Which tokens the landmark pooling averages and how. Bins are PyTorch's adaptive ones (kernels/cpu/pool.h), so
/// they may overlap.
struct LandmarkPoolShape {
  int64_t B = 0, N = 0, C = 0;  // x / dx [B, N, C]
  int64_t first = 0, L = 0;     // the pooled tokens are first .. first + L - 1
  int64_t grid = 0;             // G > 0: the L = G² tokens are a row-major G×G grid pooled to p×p (m = p²); 0: 1-D
  int64_t m = 0;                // landmarks; 2-D landmark j = row·p + col
  int64_t pool = 0;             // p (2-D only)
  int64_t batch_stride = 0, row_stride = 0;  // x's strides in elements (forward only); channels are contiguous
};

/// Sizes of one MiTA attention call on [B, H, N, d] heads with m landmarks and k routed keys each. `Scale` is the
/// type of the logit scales: double for the CPU kernels (the f64 oracle keeps the exact scales), float on the
/// device (MitaShape).
template <typename Scale>
struct MitaShapeOf {
  int64_t B = 0, H = 0, N = 0, m = 0, k = 0, d = 0;
  Scale scale = 1, shared_scale = 1;  // routed / shared logit scales
  bool shared = true;                 // false: route-only
};
using MitaShape = MitaShapeOf<float>;      // the CUDA kernels'
using MitaShapeF64 = MitaShapeOf<double>;  // the CPU kernels'

/// The routing arrays (contiguous i32, ops::MitaRouting's layout).
struct MitaRoutingArrays {
  const int32_t* expert_keys = nullptr;  // [B, H, m, k]
  const int32_t* experts = nullptr;      // [B, H, N]
  const int32_t* order = nullptr;        // [B, H, N]
  const int32_t* offsets = nullptr;      // [B, H, m + 1]
};

}  // namespace vt::kernels
