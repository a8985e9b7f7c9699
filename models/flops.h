// Parameters and multiply-accumulates (MACs) per image of a VisionTransformer, per module and in total, in the two
// conventions of docs/mita-spec.md §6 (`vitrain flops`):
//   all     every attention matmul counted (the honest number; spec §6 "all attention matmuls counted");
//   fvcore  what fvcore's FlopCountAnalysis reports on the official PyTorch module: it skips the fused calls
//           (F.scaled_dot_product_attention, the FlashAttention autograd Function), so for MiTA only the RKᵀ and
//           RQᵀ routing products count and for Agent-minus nothing of its two SDPAs; timm 0.4.12's dense
//           Attention, agent_bias and linear attention use explicit matmuls and count in full.
// Shared rules (fvcore's handles): Linear / conv = output elements × input features (bias free), so linears are
// counted from the built model's weight shapes; LayerNorm = 5·numel; adaptive average pooling (landmarks, agents)
// = 1 per pooled input element (BRA's region means of q and k likewise, in `all` only: fvcore has no handle for
// torch.mean); GELU, softmax, SiLU, the gate product, residual adds, RMSNorm (linear attention's
// q/k norms; all of ViT-5's norms), ViT-5's rotary embedding and LayerScale products and the input-independent
// agent bias tables are not counted. Patch embedding and head are included
// (the head sees the CLS token only). These reproduce every number of spec §6 at its printed precision.
// A Segmenter (Table 4) is its encoder (no head) plus its decoder, counted with the same rules; the decoder's
// products are explicit matmuls in the official code, so both conventions count them: CBT per layer LN, proj,
// pooling (1 per pooled element), Rep·Wᵀ, A·W, Rep·Repᵀ, its product with Rep, Aᵀ·Z, to_out; then decoder_norm,
// P·Clᵀ and mask_norm (the L2 normalisations and per-head scales uncounted, like other element-wise ops); the
// bilinear upsampling to the crop as fvcore's upsample_bilinear2d handle: 4 per output element. The paper's
// Table 4 counts are close to the "all" column (numbers in tests/unit/test_flops.cpp).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "models/segmenter.h"
#include "models/vit.h"

namespace vt::models {

/// Parameters and per-image MACs of one module, in both conventions.
struct FlopsRow {
  std::string name;
  int64_t params = 0;
  int64_t macs = 0;         ///< all attention matmuls counted
  int64_t macs_fvcore = 0;  ///< fvcore-style: fused attention calls skipped
};

/// The whole count. `rows` are the top-level modules (the "blocks" row sums all blocks); `block_rows` is one block
/// (norm1, attn.qkv, attn.core, attn.proj, attn.dwc, attn.gate, norm2, mlp.fc1, mlp.fc2, layer_scale): every block
/// is the same.
struct FlopsReport {
  std::string attention;  ///< a short description of the attention kind and its settings
  std::string decoder;    ///< segmentation decoder type (cbt | linear); empty for a classifier
  int64_t image_size = 0, patch_size = 0, tokens = 0, depth = 0;
  std::vector<FlopsRow> rows;
  std::vector<FlopsRow> block_rows;
  FlopsRow total;
  /// The row named `name` among `rows`, then `block_rows`; throws if there is none.
  const FlopsRow& row(const std::string& name) const;
};

/// Counts `model`: parameters from its tensors, MACs from its layer shapes and its attention settings.
FlopsReport count_flops(const VisionTransformer& model);
/// Counts a Segmenter: the encoder's rows, then decoder.layers, decoder.masks (or decoder.head) and upsample.
FlopsReport count_flops(const Segmenter& model);

/// The attention core of one layer (from q, k, v to the input of proj; DWC and gate excluded) for N tokens of
/// width C with `heads` heads: {all-matmul MACs, fvcore-style MACs}. For MiTA (C = H·d): RKᵀ m·N·C, RQᵀ m·N·C,
/// V̂ 2·m·N·C, shared 2·N·m·C, routed 2·N·s·k·C, landmark pooling L·C (spec §2.7).
/// `registers` (ViT-5) are tokens after the patches that the MiTA landmarks do not pool.
std::pair<int64_t, int64_t> attention_core_macs(const AttentionConfig& cfg, int64_t tokens, int64_t dim, int64_t heads,
                                                int64_t registers = 0);

/// `n` with an SI suffix and two decimals as fvcore/timm print it: 4.43G, 22.05M, 768.00K, 12.
std::string si_count(int64_t n);

}  // namespace vt::models
