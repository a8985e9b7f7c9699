// MiTA (Mixture-of-Top-k Attention) as a composition of differentiable ops: the CPU reference that the fused
// kernels are tested against. It follows docs/mita-spec.md §2 literally (shifted landmark pooling, the 1/d
// shared-logit scale, one joint softmax over [shared | routed]); autograd supplies the backward of §2.4.
//
// Landmark pooling (which tokens, and 1-D or 2-D):
//   landmark_pool = "shifted" pools tokens 0..N-2 (CLS included, last patch dropped: the official DeiT/Segmenter
//   code); "patches" pools tokens 1..N-1 (the patch tokens, ViT-5 / agent-bias style); "sequence" pools all N
//   tokens 1-D (sequence models without CLS, the long-sequence benchmark). For the first two L = N-1 tokens:
//   if L = G² is a perfect square the tokens form a row-major G×G grid and are pooled 2-D to p×p with m = p²
//   (m must then be a perfect square); otherwise they are pooled 1-D to m bins. Both use PyTorch's adaptive
//   bins [floor(i·L/m), ceil((i+1)·L/m)), which may overlap. "random" (Appendix A's ablation) pools nothing: the
//   landmarks are the queries of m distinct patch tokens drawn afresh at every forward.
#pragma once
#include <string>
#include <vector>

#include "ops/mita.h"
#include "tensor/tensor.h"

namespace vt::models {

struct MitaOptions {
  int64_t heads = 1;
  int64_t m = 25;              // landmarks (experts)
  int64_t k = 25;              // keys per expert (already resolved: no 0 default here)
  int64_t s = 1;               // experts per query; the joint softmax covers m + s·k slots (no dedup, spec §2.6)
  bool route_only = false;     // no shared branch: softmax over the s·k routed logits alone
  bool compress_only = false;  // no routed branch: softmax over the m shared logits alone (Appendix A)
  std::string landmark_pool = "shifted";  // shifted | patches | sequence | random
  int64_t registers = 0;                  // tokens after the patches (ViT-5's registers): never pooled; "patches" only
  std::string shared_scale = "official";  // official: 1/d on shared logits | paper: 1/√d
  // fused: ops::mita_route + ops::mita_attention (s = 1; otherwise, and with a MitaDebug, the reference runs);
  // reference: the op-by-op composite below, the oracle.
  std::string impl = "fused";
  bool deterministic = false;  // fused CUDA backward without float atomics
};

/// Optional side outputs (all detached, for tests and debugging). Shapes with H heads, d = C/H, P = s·k.
struct MitaDebug {
  Tensor landmarks;    // [B, m, C]     pooled full-width queries R0
  Tensor key_scores;   // [B, H, m, N]  S = R Kᵀ (unscaled), the expert-construction scores
  Tensor gate_scores;  // [B, H, m, N]  R Qᵀ (unscaled), the routing scores
  Tensor expert_keys;  // [B, H, m, k]  i64: I_j, the top-k key indices of expert j (descending score)
  Tensor experts;      // [B, H, N, s]  i64: the experts each query is routed to (s = 1: argmax, first on ties)
  Tensor routed_keys;  // [B, H, N, P]  i64: the key index behind each routed slot
  Tensor weights;      // [B, H, N, m + P] joint softmax weights ([B, H, N, P] when route_only)
};

/// Test and analysis hook: while one is alive, the fused MiTA calls on this thread append their routing (moved
/// to the CPU) to `routings` (record), or take theirs from it in call order (replay) — so a CPU and a GPU run,
/// whose scores differ in the last bits, make the same discrete choices.
class MitaRoutingTap {
 public:
  enum class Mode { record, replay };
  explicit MitaRoutingTap(Mode mode);
  ~MitaRoutingTap();
  MitaRoutingTap(const MitaRoutingTap&) = delete;
  MitaRoutingTap& operator=(const MitaRoutingTap&) = delete;
  Mode mode;
  std::vector<ops::MitaRouting> routings;
  size_t next = 0;
};

/// The landmark layout of `landmark_pool` (shifted | patches | sequence; "random" pools nothing) over N tokens with
/// m landmarks: the one place the rule above is decided and checked; throws naming model.attention.m /
/// landmark_pool when it is impossible. With `registers` (landmark_pool "patches" only) the last ones are left out:
/// tokens 1..N-1-registers are pooled.
ops::MitaLandmarkLayout landmark_layout(int64_t N, int64_t m, const std::string& landmark_pool, int64_t registers = 0);

/// R0 [B, m, C]: adaptive average pooling of the full-width queries q [B, N, C] (see the rule above).
Tensor mita_landmarks(const Tensor& q, const MitaOptions& o);

/// MiTA on q, k, v [B, N, C] (before the head split; channel c belongs to head c / d) → [B, N, C].
Tensor mita_core(const Tensor& q, const Tensor& k, const Tensor& v, const MitaOptions& o, MitaDebug* debug = nullptr);

/// The training fast path on the packed projection qkv [B, N, 3C] (q, k, v at channels 0, C, 2C): the same as
/// mita_core on its three slices, as one op whose backward assembles d(qkv) at once (ops::mita_qkv_attention).
/// Applies when the fused kernels do (impl fused, s = 1, pooled landmarks, not compress-only, a supported dtype and
/// head dim) and gradients are recorded or the op runs as one kernel (ops::mita_qkv_one_kernel); returns an
/// undefined tensor otherwise (then call mita_core).
/// With the DWC's weight and bias (qkv's dtype) the op also adds the DWC of v (MitaAttention's dwc); with
/// `gate`, qkv is qkvg [B, N, 4C] and the result is multiplied by SiLU(g) (MitaAttention's gate).
Tensor mita_core_packed(const Tensor& qkv, const MitaOptions& o, const Tensor& dwc_weight = {},
                        const Tensor& dwc_bias = {}, bool gate = false);

/// The same with given landmarks R0 [B, m, C] instead of pooled ones (o.landmark_pool is ignored).
Tensor mita_core_with_landmarks(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& landmarks,
                                const MitaOptions& o, MitaDebug* debug = nullptr);

}  // namespace vt::models
