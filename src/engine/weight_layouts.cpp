#include "engine/weight_layouts.h"

#include <algorithm>
#include <set>

namespace vt::engine {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// Replaces the dotted segment(s) `from` (e.g. ".attn.to_out.0.") by `to` once; false when absent.
bool replace_part(std::string& name, const std::string& from, const std::string& to) {
  const size_t at = name.find(from);
  if (at == std::string::npos) return false;
  name.replace(at, from.size(), to);
  return true;
}

}  // namespace

std::vector<std::string> from_official_layout(io::NamedTensors& weights) {
  std::vector<std::string> notes;
  int64_t renamed = 0;
  for (auto& [name, t] : weights)
    if (replace_part(name, ".attn.to_qkv.", ".attn.qkv.") || replace_part(name, ".attn.to_out.0.", ".attn.proj."))
      ++renamed;
  if (renamed > 0)
    notes.push_back(std::to_string(renamed) +
                    " linear-attention / MHLA tensor(s) renamed from the official to_qkv / "
                    "to_out.0 to qkv / proj");

  int64_t bra = 0;
  for (auto& [name, t] : weights)
    if (replace_part(name, ".attn.qkv.qkv.", ".attn.qkv.") || replace_part(name, ".attn.wo.", ".attn.proj.")) ++bra;
  if (bra > 0)
    notes.push_back(std::to_string(bra) + " BRA tensor(s) renamed from the official qkv.qkv / wo to qkv / proj");

  const bool segmenter =
      std::any_of(weights.begin(), weights.end(), [](const auto& nt) { return starts_with(nt.first, "decoder."); });
  const auto dropped = std::erase_if(weights, [&](const auto& nt) {
    return starts_with(nt.first, "pre_logits.") || (segmenter && starts_with(nt.first, "encoder.head."));
  });
  if (dropped > 0)
    notes.push_back(std::to_string(dropped) + " tensor(s) the official model never uses dropped " +
                    (segmenter ? "(the Segmenter encoder's ImageNet head encoder.head.*)" : "(pre_logits.*)"));
  return notes;
}

void to_official_layout(io::NamedTensors& weights) {
  // Blocks whose attention is the linear kind or MHLA: the ones with a q_norm or a piece_attn (no other kind has
  // one).
  std::set<std::string> linear_blocks;
  for (const auto& [name, t] : weights)
    for (const char* marker : {".attn.q_norm.weight", ".attn.piece_attn.conv.weight"})
      if (const size_t at = name.find(marker); at != std::string::npos) linear_blocks.insert(name.substr(0, at));
  // Blocks whose attention is BRA: the ones with an LCE conv (lepe).
  std::set<std::string> bra_blocks;
  for (const auto& [name, t] : weights)
    if (const size_t at = name.find(".attn.lepe.weight"); at != std::string::npos)
      bra_blocks.insert(name.substr(0, at));
  for (auto& [name, t] : weights) {
    const size_t at = name.find(".attn.");
    if (at == std::string::npos) continue;
    if (linear_blocks.count(name.substr(0, at))) {
      if (!replace_part(name, ".attn.qkv.", ".attn.to_qkv.")) replace_part(name, ".attn.proj.", ".attn.to_out.0.");
    } else if (bra_blocks.count(name.substr(0, at))) {
      if (!replace_part(name, ".attn.qkv.", ".attn.qkv.qkv.")) replace_part(name, ".attn.proj.", ".attn.wo.");
    }
  }
}

}  // namespace vt::engine
