// Key maps between the layouts weights come in and ours. Our names are timm's for the ViT/DeiT parts (also
// `dist_token` / `head_dist` of distilled DeiT) and the official MiTA-DeiT modules' for MiTA (`qkv`, `qkvg`,
// `proj`, `dwc.weight` / `dwc.bias`), Agent attention (`an_bias`, `na_bias`, `ah_bias`, `aw_bias`, `ha_bias`,
// `wa_bias`, `ac_bias`, `ca_bias`) and the Segmenter (`encoder.` = the ViT, `decoder.` = CBT `cls_emb`,
// `net.layers.<i>.{norm,fn}`, `decoder_norm`, `mask_norm`). The differences left:
//   - the official Linear_Attention and MHLA call their projections `to_qkv` and `to_out.0`; ours `qkv` and `proj`;
//   - the official BRA (BiFormer's BiLevelRoutingAttention) calls them `qkv.qkv` and `wo`; ours `qkv` and `proj`;
//   - the official Segmenter's encoder keeps an ImageNet classifier (`encoder.head.*`, n_cls 1000) it never uses;
//   - old timm checkpoints may carry `pre_logits.*`, which timm's own filter drops.
#pragma once
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace vt::engine {

/// Renames official MiTA / Segmenter / timm keys to ours in place and drops the tensors the official models
/// carry but never use (listed above). Returns one line per kind of change, for the log.
std::vector<std::string> from_official_layout(io::NamedTensors& weights);

/// Our names → the official MiTA-DeiT layout (linear attention's and MHLA's `to_qkv` / `to_out.0`; BRA's `qkv.qkv` /
/// `wo`), so the authors' PyTorch modules load_state_dict the export. Dense / MiTA / Agent names are already the official ones.
void to_official_layout(io::NamedTensors& weights);

}  // namespace vt::engine
